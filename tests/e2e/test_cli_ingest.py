"""The admin commands as a user runs them: beside a running `ragbot serve` on the same data dir, or alone.

Tests of jobs rather than of sharing a Weaviate run on the session's (WEAVIATE_URL), with data dirs of their own.
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from harness.processes import ragbot, run_ragbot, wait_until_ready

_run = run_ragbot


@pytest_asyncio.fixture
async def serving(user_env: dict[str, str], tmp_path: Path) -> AsyncIterator[dict[str, str]]:
    """`ragbot serve` running; admin commands share its Weaviate instead of starting their own."""
    process = await ragbot(user_env, tmp_path, "serve")
    try:
        await wait_until_ready(f"http://127.0.0.1:{user_env['RAGBOT_PORT']}", process)
        yield user_env
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.communicate(), 60)


async def test_an_admin_builds_a_knowledge_base_from_the_terminal(serving: dict[str, str], tmp_path: Path) -> None:
    env = serving
    docs = tmp_path / "handbook"
    (docs / "policies").mkdir(parents=True)
    (docs / "policies" / "leave.md").write_text("# Leave\n\nEveryone gets 25 days of paid leave a year.\n")
    (docs / "hours.txt").write_text("The office is open from 9 to 17 on weekdays.\n")
    (docs / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32)
    (docs / ".hidden.md").write_text("never ingested")
    faq = tmp_path / "faq.csv"
    faq.write_text("question,answer,similar_questions\nHow many leave days?,25 a year,annual leave|holiday allowance\n")

    code, out, err = await _run(env, tmp_path, "kb", "create", "handbook", "--max-tokens", "200", "--overlap", "20")
    assert code == 0, err
    assert out.startswith("created handbook")

    code, _, err = await _run(env, tmp_path, "kb", "create", "handbook")
    assert code == 1
    assert err.strip() == "ragbot: A knowledge base named 'handbook' already exists."

    code, _, err = await _run(env, tmp_path, "kb", "create", "tiny", "--max-tokens", "10")
    assert code == 1
    assert "segment.max_tokens: must be 50..2000, got 10" in err

    code, _, err = await _run(env, tmp_path, "ingest", str(docs), "--kb", "handbook")
    assert code == 0, "a folder's file of a kind ragbot cannot read is skipped, not a failure"
    assert f"skipped {docs / 'logo.png'}: an image in a folder is taken for an illustration" in err
    assert "2 of 2 ingested into handbook" in err

    code, _, err = await _run(env, tmp_path, "ingest", str(docs / "logo.png"), "--kb", "handbook")
    assert code == 1, "a file named on the command line that cannot be read fails"
    assert "logo.png: failed: the PNG image is damaged or incomplete" in err

    pictures = tmp_path / "pictures"
    pictures.mkdir()
    (pictures / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32)
    code, _, err = await _run(env, tmp_path, "ingest", str(pictures), "--kb", "handbook")
    assert code == 1, "a folder with nothing readable fails"
    assert "nothing to ingest: no file ragbot can read" in err

    code, _, err = await _run(env, tmp_path, "ingest", str(docs / "hours.txt"), "--kb", "handbook")
    assert code == 0, err
    assert "unchanged" in err

    code, _, err = await _run(env, tmp_path, "faq", "import", str(faq), "--kb", "handbook")
    assert code == 0, err
    assert "1 FAQs added" in err

    code, out, err = await _run(env, tmp_path, "kb", "info", "handbook")
    assert code == 0, err
    info = json.loads(out)
    assert (info["documents"], info["faqs"]) == (2, 1)
    assert info["chunking"]["segment"]["max_tokens"] == 200

    code, out, _ = await _run(env, tmp_path, "docs", "list", "--kb", "handbook")
    rows = [line.split("\t") for line in out.strip().splitlines()]
    assert sorted(row[1] for row in rows) == ["hours.txt", "leave.md"]
    leave_id = next(row[0] for row in rows if row[1] == "leave.md")

    code, out, _ = await _run(env, tmp_path, "docs", "delete", leave_id, "--kb", "handbook")
    assert code == 0
    assert out.strip() == "deleted leave.md"

    code, out, _ = await _run(env, tmp_path, "jobs", "--kb", "handbook")
    statuses = sorted(line.split("\t")[1] for line in out.strip().splitlines())
    assert statuses == ["failed", "succeeded", "succeeded", "succeeded", "succeeded"]

    code, out, _ = await _run(env, tmp_path, "kb", "delete", "handbook")
    assert code == 1
    assert "--yes" in out
    code, out, _ = await _run(env, tmp_path, "kb", "delete", "handbook", "--yes")
    assert code == 0
    code, out, _ = await _run(env, tmp_path, "kb", "list")
    assert out == ""

    code, _, err = await _run(env, tmp_path, "ingest", str(docs), "--kb", "nope")
    assert code == 1
    assert err.strip() == "ragbot: No knowledge base named 'nope' (existing: none yet)."


async def test_serve_resumes_a_job_that_a_crash_left_running(
    shared_weaviate_env: dict[str, str], tmp_path: Path
) -> None:
    import sqlite3

    from harness.processes import free_port

    (tmp_path / "hours.txt").write_text("The office is open from 9 to 17 on weekdays.\n")
    code, _, err = await run_ragbot(shared_weaviate_env, tmp_path, "kb", "create", "office")
    assert code == 0, err
    database = Path(shared_weaviate_env["RAGBOT_DATA_DIR"]) / "ragbot.sqlite3"
    with sqlite3.connect(database) as connection:
        kb_id = connection.execute("SELECT id FROM knowledge_base").fetchone()[0]
        connection.execute(
            "INSERT INTO ingestion_job (id, kb_id, kind, source, status, stage, done, total, error, requested_by,"
            " requested_from, result, attempts, created_at) VALUES ('job-1', ?, 'file', ?, 'running', 'embed', 0, 1,"
            " '', 'cli', '{}', '{}', 1, '2026-01-01 00:00:00')",
            (kb_id, str(tmp_path / "hours.txt")),
        )
    env = {**shared_weaviate_env, "RAGBOT_PORT": str(free_port())}
    process = await ragbot(env, tmp_path, "serve")
    try:
        await wait_until_ready(f"http://127.0.0.1:{env['RAGBOT_PORT']}", process)
        for _ in range(600):
            with sqlite3.connect(database) as connection:
                status = connection.execute("SELECT status FROM ingestion_job WHERE id = 'job-1'").fetchone()[0]
            if status in ("succeeded", "failed"):
                break
            await asyncio.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.communicate(), 60)
    assert status == "succeeded"


async def test_jobs_are_listed_a_page_at_a_time_and_an_orphaned_job_says_who_left_it(
    shared_weaviate_env: dict[str, str], tmp_path: Path
) -> None:
    import sqlite3

    code, _, err = await run_ragbot(shared_weaviate_env, tmp_path, "kb", "create", "office")
    assert code == 0, err
    database = Path(shared_weaviate_env["RAGBOT_DATA_DIR"]) / "ragbot.sqlite3"
    rows = [(f"job-{n}", "succeeded", "", None) for n in range(1, 4)]
    rows += [("job-4", "running", "laptop:4242:abc123", "2026-01-01 00:10:00"), ("job-5", "queued", "", None)]
    with sqlite3.connect(database) as connection:
        kb_id = connection.execute("SELECT id FROM knowledge_base").fetchone()[0]
        for n, (job_id, status, owner, expires) in enumerate(rows, start=1):
            connection.execute(
                "INSERT INTO ingestion_job (id, kb_id, kind, source, status, stage, done, total, error, requested_by,"
                " requested_from, result, attempts, created_at, lease_owner, lease_expires_at) VALUES (?, ?, 'file',"
                " ?, ?, 'embed', 3, 8, '', 'cli', '{}', '{\"chunks\": 2}', 1, ?, ?, ?)",
                (job_id, kb_id, f"/docs/{job_id}.md", status, f"2026-01-01 00:00:0{n}", owner, expires),
            )

    code, out, err = await run_ragbot(shared_weaviate_env, tmp_path, "jobs", "--limit", "2")
    assert code == 0, err
    assert [line.split("\t")[0] for line in out.splitlines()] == ["job-5", "job-4"]
    assert "jobs 1-2 of 5; 3 more: `--limit 2 --page 2` shows the next 2, `--all` shows every one" in err
    orphan = out.splitlines()[1].split("\t")[4]
    assert orphan.startswith("embed 3/8; its runner laptop:4242:abc123 stopped ")
    assert orphan.endswith("ago: `ragbot serve` or the same `ragbot ingest` resumes it")

    code, out, err = await run_ragbot(shared_weaviate_env, tmp_path, "jobs", "--limit", "2", "--page", "3")
    assert code == 0, err
    assert [line.split("\t")[0] for line in out.splitlines()] == ["job-1"]
    assert "more" not in err

    code, out, err = await run_ragbot(shared_weaviate_env, tmp_path, "jobs", "--all", "--status", "succeeded")
    assert code == 0, err
    assert [line.split("\t")[0] for line in out.splitlines()] == ["job-3", "job-2", "job-1"]
