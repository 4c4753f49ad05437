"""Commands beside a running `ragbot serve`: doctor checks its Weaviate; a command it leaves behind ends in one line."""

from __future__ import annotations

import asyncio
import json
import re
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from harness.processes import ragbot, run_ragbot, wait_until_ready


@pytest_asyncio.fixture
async def serve(user_env: dict[str, str], tmp_path: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """`ragbot serve` on the user's data dir, ready; stopped with SIGTERM at the end if a test has not."""
    process = await ragbot(user_env, tmp_path, "serve")
    try:
        await wait_until_ready(f"http://127.0.0.1:{user_env['RAGBOT_PORT']}", process)
        yield process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.communicate(), 60)


async def test_doctor_beside_serve_checks_the_weaviate_it_serves(
    serve: asyncio.subprocess.Process, user_env: dict[str, str], tmp_path: Path
) -> None:
    code, out, err = await run_ragbot(user_env, tmp_path, "doctor")

    assert code == 0, out + err
    weaviate = next(line for line in out.splitlines() if line.split()[1:2] == ["weaviate"])
    data = Path(user_env["RAGBOT_DATA_DIR"]).resolve() / "weaviate"
    assert re.fullmatch(
        rf"OK +weaviate +served by the running ragbot, pid {serve.pid}, http://127\.0\.0\.1:\d+, data in {data}",
        weaviate,
    ), out
    assert "make weaviate" not in out


def _beir_set(folder: Path, documents: int) -> Path:
    """A retrieval set big enough that `ragbot eval` reports its ingestion progress (every 500 documents)."""
    folder.mkdir()
    corpus = [
        {"id": f"d{n}", "title": f"Note {n}", "text": f"Room {n} is cleaned on day {n % 7}."} for n in range(documents)
    ]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(row) + "\n" for row in corpus))
    (folder / "queries.jsonl").write_text(json.dumps({"id": "q1", "text": "When is room 3 cleaned?"}) + "\n")
    (folder / "qrels.jsonl").write_text(json.dumps({"query_id": "q1", "doc_id": "d3", "score": 1}) + "\n")
    return folder


async def test_a_command_whose_service_stops_under_it_ends_with_one_line_saying_what_to_do(
    serve: asyncio.subprocess.Process, user_env: dict[str, str], tmp_path: Path
) -> None:
    folder = _beir_set(tmp_path / "rooms", 800)
    evaluation = await ragbot(user_env, tmp_path, "eval", str(folder))
    assert evaluation.stdout is not None
    progress = await asyncio.wait_for(evaluation.stdout.readline(), 240)
    assert progress.decode().strip() == "rooms: 500/800 documents ingested"

    serve.send_signal(signal.SIGTERM)
    await asyncio.wait_for(serve.wait(), 60)
    out, err = await asyncio.wait_for(evaluation.communicate(), 60)

    assert evaluation.returncode == 2, out.decode() + err.decode()
    assert err.decode().splitlines() == [
        f"ragbot: the Weaviate server of the running ragbot (pid {serve.pid}) stopped while this command ran "
        "(it stops with that ragbot): start `ragbot serve` again, or stop it and run the command alone"
    ]
