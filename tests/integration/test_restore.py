"""`ragbot restore` on each backend: an older schema migrated after the restore; each refusal leaves the store as it
was (the index rebuilt from the restored store is tests/e2e/test_cli_backup.py's)."""

from __future__ import annotations

import io
import json
import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from bot.app.settings import Settings
from bot.chat.instances import INSTANCE_PREFIX
from bot.cli.backup import run_backup
from bot.cli.restore import run_restore
from bot.errors import UserFacingError
from storage.backup.archive import DUMPS
from storage.backup.manifest import MANIFEST
from storage.db import Database, DatabaseConfig, head_revision
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.repos.leases import LeaseRepo
from tests.conftest import ROOT, EmbeddedSettings, fresh_postgres_database

NOWHERE = "http://127.0.0.1:9"
"""A Weaviate no one serves: a restore refused before it reaches the index never notices."""


@pytest.fixture
async def store_url(database_url: str, request: pytest.FixtureRequest) -> str:
    """An empty store on each backend (the SQLite file in the test's data dir)."""
    if database_url == "postgresql-fresh":
        return await fresh_postgres_database(request.getfixturevalue("postgres_url"))
    return database_url


@pytest.fixture
def settings_for(embedded_settings: EmbeddedSettings, tmp_path: Path) -> Callable[..., Settings]:
    """Settings on the store at a URL (SQLite's in the data dir), with a local Weaviate of the restore's own unless
    told otherwise: a restore rebuilds the whole index, which the session's Weaviate shares with other tests."""

    def build(url: str, **more: object) -> Settings:
        database = {} if url.startswith("sqlite") else {"DATABASE_URL": url}
        return embedded_settings(tmp_path, **{"WEAVIATE_URL": None, "WEAVIATE_GRPC_URL": None, **database, **more})

    return build


def _upgrade(connection: Connection, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(ROOT / "storage" / "migrations"))
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


async def _schema_at(url: str, revision: str) -> None:
    """Migrate the store at `url` up to `revision` only, as an older ragbot left it."""
    engine = create_async_engine(DatabaseConfig(url=url).async_url())
    async with engine.begin() as connection:
        await connection.run_sync(_upgrade, revision)
    await engine.dispose()


async def _kb_names(url: str) -> list[str]:
    db = Database(DatabaseConfig(url=url))
    await db.open(migrate=False)
    try:
        return [kb.name for kb in await KnowledgeBaseRepo(db).all()]
    finally:
        await db.close()


async def test_a_backup_of_an_older_schema_is_restored_over_a_newer_store_and_migrated(
    store_url: str, settings_for: Callable[..., Settings], tmp_path: Path
) -> None:
    older = f"{int(head_revision()) - 1:04d}"
    await _schema_at(store_url, older)
    db = Database(DatabaseConfig(url=store_url))
    await db.open(migrate=False)
    await KnowledgeBaseRepo(db).create("hr", chunking={})
    await db.close()
    settings = settings_for(store_url)
    assert await run_backup(settings, tmp_path / "backup", force=False, out=io.StringIO()) == 0
    # Since then: upgraded to this version's schema, a knowledge base added, and a serve on this host that died.
    db = Database(DatabaseConfig(url=store_url))
    await db.open()
    await KnowledgeBaseRepo(db).create("later", chunking={})
    dead = f"{socket.gethostname()}:{_dead_pid()}:abc123"
    assert await LeaseRepo(db).acquire(INSTANCE_PREFIX + dead, dead, lease=600)
    await db.close()
    out, progress = io.StringIO(), io.StringIO()

    assert await run_restore(settings, tmp_path / "backup", out=out, progress=progress) == 0

    assert f"schema migrated from {older} to {head_revision()}" in progress.getvalue()
    assert out.getvalue().startswith(f"restored {tmp_path / 'backup'}: 1 knowledge base indexed afresh")
    assert await _kb_names(store_url) == ["hr"]
    db = Database(DatabaseConfig(url=store_url))
    await db.open(migrate=False)
    try:
        async with db.engine.connect() as connection:
            revisions = (await connection.execute(text("SELECT version_num FROM alembic_version"))).scalars().all()
        assert revisions == [head_revision()]
        assert await LeaseRepo(db).live("") == [], "the leases of processes gone with the old store are forgotten"
    finally:
        await db.close()


def _dead_pid() -> int:
    """A pid no process has now (the highest ones are the least likely to be reused meanwhile)."""
    return next(pid for pid in range(4_000_000, 3_000_000, -1) if not os.path.exists(f"/proc/{pid}"))


def _drop_manifest(backup: Path) -> None:
    (backup / MANIFEST).unlink()


def _flip_a_byte(backup: Path) -> None:
    dump = next(backup / name for name in DUMPS.values() if (backup / name).exists())
    data = bytearray(dump.read_bytes())
    data[len(data) // 2] ^= 0xFF
    dump.write_bytes(bytes(data))


def _newer_schema(backup: Path) -> None:
    path = backup / MANIFEST
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_revision": "9999"}))


@pytest.mark.parametrize(
    ("damage", "refusal"),
    [
        (_drop_manifest, "holds no manifest.json: not a ragbot backup, or one that did not finish"),
        (_flip_a_byte, "checksum mismatch: "),
        (_newer_schema, f"the backup's schema revision 9999 is newer than this ragbot's ({head_revision()})"),
    ],
    ids=["no-manifest", "bad-checksum", "newer-schema"],
)
async def test_a_refused_restore_says_why_in_one_line_and_leaves_the_store_as_it_was(
    store_url: str,
    settings_for: Callable[..., Settings],
    tmp_path: Path,
    damage: Callable[[Path], None],
    refusal: str,
) -> None:
    db = Database(DatabaseConfig(url=store_url))
    await db.open()
    await KnowledgeBaseRepo(db).create("hr", chunking={})
    settings = settings_for(store_url, WEAVIATE_URL=NOWHERE)
    await run_backup(settings, tmp_path / "backup", force=False, out=io.StringIO())
    await KnowledgeBaseRepo(db).create("later", chunking={})
    await db.close()
    damage(tmp_path / "backup")

    with pytest.raises(UserFacingError) as refused:
        await run_restore(settings, tmp_path / "backup", out=io.StringIO(), progress=io.StringIO())

    assert refusal in refused.value.user_message
    assert refused.value.user_message.endswith("nothing was restored")
    assert "\n" not in refused.value.user_message
    assert await _kb_names(store_url) == ["hr", "later"]


async def test_a_restore_is_refused_while_a_serve_is_alive_on_the_store(
    store_url: str, settings_for: Callable[..., Settings], tmp_path: Path
) -> None:
    db = Database(DatabaseConfig(url=store_url))
    await db.open()
    settings = settings_for(store_url, WEAVIATE_URL=NOWHERE)
    await run_backup(settings, tmp_path / "backup", force=False, out=io.StringIO())
    await KnowledgeBaseRepo(db).create("later", chunking={})
    # A serve on another host: whether it still runs cannot be checked from here, so its live lease counts.
    assert await LeaseRepo(db).acquire(INSTANCE_PREFIX + "elsewhere:4242:a1b2c3", "elsewhere:4242:a1b2c3", lease=600)
    await db.close()

    with pytest.raises(UserFacingError) as refused:
        await run_restore(settings, tmp_path / "backup", out=io.StringIO(), progress=io.StringIO())

    assert refused.value.user_message == (
        "`ragbot serve` is running on this database (elsewhere:4242:a1b2c3): stop every instance before restoring; "
        "nothing was restored"
    )
    assert await _kb_names(store_url) == ["later"]


async def test_a_backup_of_one_kind_of_store_is_refused_by_the_other(
    store_url: str, settings_for: Callable[..., Settings], tmp_path: Path, postgres_url: str
) -> None:
    db = Database(DatabaseConfig(url=store_url))
    await db.open()
    await db.close()
    settings = settings_for(store_url, WEAVIATE_URL=NOWHERE)
    await run_backup(settings, tmp_path / "backup", force=False, out=io.StringIO())
    other = (
        settings_for(await fresh_postgres_database(postgres_url), WEAVIATE_URL=NOWHERE)
        if store_url.startswith("sqlite")
        else settings_for(f"sqlite:///{tmp_path / 'ragbot.sqlite3'}", WEAVIATE_URL=NOWHERE)
    )

    with pytest.raises(UserFacingError) as refused:
        await run_restore(other, tmp_path / "backup", out=io.StringIO(), progress=io.StringIO())

    kinds = ("a SQLite store", "a PostgreSQL database (DATABASE_URL)")
    made, configured = kinds if store_url.startswith("sqlite") else kinds[::-1]
    assert refused.value.user_message == (
        f"the backup is of {made}, but this ragbot uses {configured}: restore it with the same kind of store; "
        "nothing was restored"
    )
