"""The README's other `ragbot` commands as a user runs them: stats after a few questions, the local Weaviate in the
foreground, and the FAQ template."""

from __future__ import annotations

import asyncio
import csv
import io
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harness.processes import free_port, ragbot, run_ragbot, serve_logged, wait_until_ready


async def test_stats_counts_the_questions_asked_and_lists_what_found_nothing(
    shared_weaviate_env: dict[str, str], tmp_path: Path
) -> None:
    env = shared_weaviate_env
    (tmp_path / "hours.md").write_text("# Hours\n\nThe office is open from 9 to 17 on weekdays.\n")
    for args in (("kb", "create", "hr"), ("ingest", "hours.md", "--kb", "hr")):
        code, _, err = await run_ragbot(env, tmp_path, *args)
        assert code == 0, err
    code, _, err = await run_ragbot(env, tmp_path, "ask", "When does the office open?", "--kb", "hr")
    assert code == 0, err
    code, _, err = await run_ragbot(env, tmp_path, "ask", "公司的停车场在哪里？", "--kb", "hr")
    assert code == 1, "nothing found"

    code, out, err = await run_ragbot(env, tmp_path, "stats", "--days", "7")
    assert code == 0, err
    assert out.startswith("Last 7 days: 2 questions\n")
    assert "Feedback: 0 helpful, 0 not helpful" in out
    assert "Asked, and nothing was found" in out, out
    heading = "Asked, and nothing was found (make these FAQs or add documents; 1 in all, by meaning):\n"
    nothing_found = out.split(heading)[1]
    assert "公司的停车场在哪里？" in nothing_found

    code, _, err = await run_ragbot(env, tmp_path, "stats", "--days", "0")
    assert code == 1
    assert err.strip() == "ragbot: --days must be 1 or more."
    code, _, err = await run_ragbot(env, tmp_path, "stats", "--top", "0")
    assert code == 1
    assert err.strip() == "ragbot: --top must be 1 or more."


async def test_weaviate_runs_in_the_foreground_until_interrupted(user_env: dict[str, str], tmp_path: Path) -> None:
    process = await ragbot(user_env, tmp_path, "weaviate")
    try:
        assert process.stdout is not None
        ready = await asyncio.wait_for(process.stdout.readline(), 120)
        assert ready.decode().startswith("weaviate ready: http http://127.0.0.1:")
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, stderr.decode()
    assert not (Path(user_env["RAGBOT_DATA_DIR"]) / "weaviate" / "ragbot-weaviate.pid").exists()


async def test_faq_template_prints_a_sheet_that_imports_as_it_is(user_env: dict[str, str], tmp_path: Path) -> None:
    code, out, err = await run_ragbot(user_env, tmp_path, "faq", "template")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows
    assert {"question", "answer"} <= set(rows[0])
    assert all(row["question"] and row["answer"] for row in rows)


async def test_ingest_of_a_folder_imports_an_faq_sheet_as_faqs_not_as_a_document(
    shared_weaviate_env: dict[str, str], tmp_path: Path
) -> None:
    env = shared_weaviate_env
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "hours.md").write_text("# Hours\n\nThe office is open from 9 to 17 on weekdays.\n")
    (docs / "faq.csv").write_text('question,answer\nWho waters the plants?,"Facilities, on Mondays."\n')
    (docs / "prices.csv").write_text("item,price\ncoffee,2\n")
    code, _, err = await run_ragbot(env, tmp_path, "kb", "create", "hr")
    assert code == 0, err
    code, _, err = await run_ragbot(env, tmp_path, "ingest", str(docs), "--kb", "hr")
    assert code == 0, err
    assert "faq.csv: 1 FAQs added" in err
    code, out, err = await run_ragbot(env, tmp_path, "docs", "list", "--kb", "hr")
    assert code == 0, err
    assert sorted(line.split("\t")[1] for line in out.strip().splitlines()) == ["hours.md", "prices.csv"]


async def test_eval_of_a_conversation_set_can_count_declines_alone(
    shared_weaviate_env: dict[str, str], tmp_path: Path
) -> None:
    folder = Path(__file__).resolve().parents[1] / "data" / "mtrag-mini"

    code, out, err = await run_ragbot(shared_weaviate_env, tmp_path, "eval", str(folder), "--declines-only")

    assert code == 0, err
    assert "retrieval by query form" not in out
    assert "### mtrag-mini: declines through the answer pipeline" in out
    labels = [line.split(" | ")[0].removeprefix("| ") for line in out.splitlines() if "%" in line]
    assert labels == ["UNANSWERABLE", "ANSWERABLE", "PARTIAL", "UNDERSPECIFIED"]


async def test_kb_grant_lets_a_workspace_read_a_knowledge_base_and_revoke_takes_it_back(
    shared_weaviate_env: dict[str, str], tmp_path: Path
) -> None:
    env = shared_weaviate_env
    code, _, err = await run_ragbot(env, tmp_path, "kb", "create", "policies")
    assert code == 0, err
    code, out, err = await run_ragbot(env, tmp_path, "kb", "grant", "policies", "slack:T012AB3CD")
    assert (code, out) == (0, "slack:T012AB3CD may now read policies\n"), err
    code, out, err = await run_ragbot(env, tmp_path, "kb", "list")
    assert code == 0, err
    (line,) = [line for line in out.splitlines() if line.startswith("policies\t")]
    assert line.endswith("\towner operator\tread by slack:T012AB3CD")
    code, _, err = await run_ragbot(env, tmp_path, "kb", "grant", "policies", "everyone")
    assert code == 1
    assert "'everyone' is not a tenant: write it as platform:workspace" in err
    code, out, err = await run_ragbot(env, tmp_path, "kb", "revoke", "policies", "slack:T012AB3CD")
    assert (code, out) == (0, "slack:T012AB3CD no longer reads policies\n"), err
    code, _, err = await run_ragbot(env, tmp_path, "kb", "grant", "slack:T012AB3CD/policies", "slack:T9")
    assert code == 1
    assert "No knowledge base named 'slack:T012AB3CD/policies'" in err


async def test_jobs_schedules_lists_the_retention_sweep_a_running_service_keeps(
    shared_weaviate_env: dict[str, str], tmp_path: Path
) -> None:
    env = shared_weaviate_env | {"RAGBOT_PORT": str(free_port()), "RETENTION_EVERY": "2h"}
    process, log = await serve_logged(env, tmp_path)
    try:
        await wait_until_ready(f"http://127.0.0.1:{env['RAGBOT_PORT']}", process)
        code, out, err = await run_ragbot(env, tmp_path, "jobs", "--schedules")
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 60)
    assert code == 0, err
    header, *rows = out.splitlines()
    assert header.split("\t") == ["id", "kind", "kb", "source", "every", "last run", "next run", "last outcome"]
    (retention,) = [row.split("\t") for row in rows]
    assert retention[1:6] == ["retention", "-", "-", "2h", "never"]
    next_run = datetime.fromisoformat(retention[6])
    assert next_run.timestamp() % 7200 == 0
    assert datetime.now(UTC) < next_run <= datetime.now(UTC) + timedelta(hours=2)
    assert process.returncode == 0, log.read_text()
