"""bench/legs.py --quick runs end to end, and every leg it times did its work: web and graph candidates, SQL run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

# SciFact-like claims naming things the entity rules take for names (a capital letter, a digit), and abstracts.
_SCIFACT = [
    ("d1", "IL-6 in sepsis", "IL-6 levels rise within hours of sepsis onset and predict mortality in adults."),
    ("d2", "CD4 counts", "CD4 counts below 200 cells per microlitre define advanced HIV disease."),
    ("d3", "QRISK2 validation", "QRISK2 predicted ten-year cardiovascular risk better than Framingham in the UK."),
]
_CLAIMS = ["IL-6 predicts sepsis mortality.", "CD4 counts define advanced HIV.", "QRISK2 predicts cardiac risk."]
_CMRC = [
    ("c1", "长江", "长江是中国第一长河，全长约6300公里，流经青海、西藏、四川等省份。"),
    ("c2", "故宫", "故宫位于北京中轴线的中心，是明清两代的皇家宫殿，旧称紫禁城。"),
    ("c3", "《红楼梦》", "《红楼梦》是曹雪芹创作的长篇小说，以贾宝玉和林黛玉的故事为主线。"),
]
_QUESTIONS = ["长江全长多少公里？", "故宫旧称什么？", "《红楼梦》的作者是谁？"]


def _write(path: Path, rows: list[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def _eval_dir(root: Path) -> Path:
    """A miniature of ../shared/eval's SciFact and CMRC 2018 (a fresh clone has no shared folder)."""
    others = [
        (f"w{n}", f"Web page {n}", f"Unrelated study {n} of sleep, diet and exercise in adults.") for n in range(12)
    ]
    sets = {"scifact": (_SCIFACT + others, _CLAIMS), "cmrc2018": (_CMRC, _QUESTIONS)}
    for name, (documents, questions) in sets.items():
        _write(root / name / "corpus.jsonl", [{"id": d, "title": t, "text": x} for d, t, x in documents])
        _write(root / name / "queries.jsonl", [{"id": f"q{n}", "text": q} for n, q in enumerate(questions)])
        _write(
            root / name / "qrels.jsonl",
            [{"query_id": f"q{n}", "doc_id": d} for n, (d, _, _) in enumerate(documents[:3])],
        )
    return root


def test_the_quick_run_times_every_leg_doing_its_work(
    tmp_path: Path, weaviate_binary: Path, model_dir: Path, tiktoken_dir: Path | None
) -> None:
    command = [sys.executable, "-m", "bench.legs", "--quick", "--eval-dir", str(_eval_dir(tmp_path / "eval"))]
    command += ["--weaviate-binary", str(weaviate_binary), "--model-dir", str(model_dir)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if tiktoken_dir is not None:
        env["TIKTOKEN_CACHE_DIR"] = str(tiktoken_dir)
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    rows: dict[str, str] = {}
    for line in done.stdout.splitlines():
        if line.startswith("| "):
            rows.setdefault(line.split(" | ")[0].lstrip("| "), line)  # a variant's first table: its figures
    for variant in ("no extra leg", "web leg, first search", "web leg, repeat", "entity leg on"):
        assert variant in rows, done.stdout
    assert "web candidates 5 (none for 0 of 3)" in rows["web leg, first search"]
    assert "web candidates 5 (none for 0 of 3)" in rows["web leg, repeat"]
    assert "graph candidates" in rows["entity leg on"]
    assert "(none for 3 of 3)" not in rows["entity leg on"]  # the names in the claims reach the graph
    assert "SQL run for 3 of 3" in rows["search + DATA_ANALYSIS"]
