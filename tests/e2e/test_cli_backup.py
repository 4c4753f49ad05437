"""`ragbot backup` beside a running `ragbot serve`, and `ragbot restore` into wiped stores, as the README shows them:
the same question is answered from the same source afterwards, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import shutil
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
import pytest

from harness.processes import run_ragbot, serve_logged, wait_until_ready
from storage.db import head_revision
from tests.conftest import fresh_postgres_database

BACKUP = "backups/2025-06-01"
QUESTION = ("ask", "when does the office open?", "--kb", "handbook")


@asynccontextmanager
async def _serving(env: dict[str, str], cwd: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """`ragbot serve`, ready; stopped with SIGTERM (and awaited) at the end."""
    process, log = await serve_logged(env, cwd)
    try:
        await wait_until_ready(f"http://127.0.0.1:{env['RAGBOT_PORT']}", process)
        yield process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 60) == 0, log.read_text()


async def _ok(env: dict[str, str], cwd: Path, *args: str) -> tuple[str, str]:
    code, out, err = await run_ragbot(env, cwd, *args)
    assert code == 0, f"ragbot {' '.join(args)}: {out}{err}"
    return out, err


async def _wipe(env: dict[str, str]) -> None:
    """Lose both stores: the database (the SQLite file, or every table of the PostgreSQL schema) and the index."""
    data = Path(env["RAGBOT_DATA_DIR"])
    if url := env.get("DATABASE_URL"):
        connection = await asyncpg.connect(url)
        try:
            await connection.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        finally:
            await connection.close()
    else:
        for name in ("ragbot.sqlite3", "ragbot.sqlite3-wal", "ragbot.sqlite3-shm"):
            (data / name).unlink(missing_ok=True)
    shutil.rmtree(data / "weaviate")


# Named as the integration tier's store parameter, so the run's summary counts these tests against each backend.
@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"])
async def test_a_backup_taken_while_serving_restores_wiped_stores_and_answers_from_the_same_source(
    database_url: str, user_env: dict[str, str], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    env = dict(user_env)
    if database_url == "postgresql":
        env["DATABASE_URL"] = await fresh_postgres_database(request.getfixturevalue("postgres_url"))
    data = Path(env["RAGBOT_DATA_DIR"])
    (tmp_path / "handbook.md").write_text(
        "# Hours\n\nThe office is open from 9 to 17 on weekdays.\n\n# Parking\n\nVisitors park in garage B.\n"
    )
    (tmp_path / "faq.csv").write_text("question,answer\nHow many days of paid leave do I get?,25 days a year.\n")
    async with _serving(env, tmp_path) as serve:
        await _ok(env, tmp_path, "kb", "create", "handbook")
        await _ok(env, tmp_path, "ingest", "handbook.md", "--kb", "handbook")
        await _ok(env, tmp_path, "faq", "import", "faq.csv", "--kb", "handbook")
        before, _ = await _ok(env, tmp_path, *QUESTION)
        assert "The office is open from 9 to 17 on weekdays." in before
        assert "handbook.md" in before.split("Sources:")[1]

        # The backup opens the database alone: with no Weaviate binary, any command that starts or joins one stops.
        out, err = await _ok({**env, "WEAVIATE_BINARY": str(tmp_path / "no-weaviate")}, tmp_path, "backup", BACKUP)

        kind = "SQLite store" if database_url == "sqlite" else "PostgreSQL database"
        assert out.startswith(f"backed up the {kind} (")
        assert f"to {tmp_path / BACKUP}; `ragbot restore` rebuilds the search index from it" in out
        assert err == ""
        await _ok(env, tmp_path, "kb", "create", "later")
        code, out, err = await run_ragbot(env, tmp_path, "restore", BACKUP)
        assert (code, out) == (1, "")
        assert err == (
            f"ragbot: a ragbot (pid {serve.pid}) is running on {data.resolve()}: stop it, and any other ragbot "
            "command, before restoring; nothing was restored\n"
        )
    await _wipe(env)

    out, progress = await _ok(env, tmp_path, "restore", BACKUP)

    lines = progress.splitlines()
    assert lines[0].startswith(f"restoring a {kind} of ")
    assert lines[0].endswith(f"(schema {head_revision()}); its files match the manifest")
    assert lines[1] == f"the {kind} is back; rebuilding the search index from it"
    assert lines[-1] == "search index: index [####################] 3/3"
    assert out == f"restored {tmp_path / BACKUP}: 1 knowledge base indexed afresh (2 chunks, 1 FAQ question)\n"
    async with _serving(env, tmp_path):
        after, _ = await _ok(env, tmp_path, *QUESTION)
        listed, _ = await _ok(env, tmp_path, "kb", "list")
    assert after == before
    assert [line.split("\t")[0] for line in listed.splitlines()] == ["handbook"], "the store as it was at the backup"
