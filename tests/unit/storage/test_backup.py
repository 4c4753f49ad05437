"""Backups of a SQLite file and the checks before a restore: each refusal says why in one line and touches nothing."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from storage.backup.archive import DUMPS, check_backup, make_backup
from storage.backup.manifest import MANIFEST, Manifest
from storage.db import DatabaseConfig, head_revision
from storage.errors import BackupError

MADE = datetime(2025, 6, 1, 3, 0, tzinfo=UTC)


def _store(path: Path, revision: str = "0013", rows: int = 3) -> DatabaseConfig:
    """A SQLite file holding a schema revision and a few rows: all a backup reads."""
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",), "as ragbot's store runs"
    with connection:
        connection.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        connection.execute("INSERT INTO alembic_version VALUES (?)", (revision,))
        connection.execute("CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT)")
        connection.executemany("INSERT INTO note (text) VALUES (?)", [(f"note {n}",) for n in range(rows)])
    connection.close()
    return DatabaseConfig(url=f"sqlite:///{path}")


async def _backup(config: DatabaseConfig, directory: Path, *, force: bool = False) -> Manifest:
    return await make_backup(config, directory, ragbot_version="0.1.0", force=force, clock=lambda: MADE)


def _notes(path: Path) -> list[str]:
    connection = sqlite3.connect(path)
    try:
        return [row[0] for row in connection.execute("SELECT text FROM note ORDER BY id")]
    finally:
        connection.close()


async def test_a_backup_is_a_copy_of_the_store_and_a_manifest_written_last(tmp_path: Path) -> None:
    config = _store(tmp_path / "ragbot.sqlite3", revision=head_revision())
    backup = tmp_path / "backups" / "monday"

    manifest = await _backup(config, backup)

    dump = backup / DUMPS["sqlite"]
    assert sorted(p.name for p in backup.iterdir()) == [MANIFEST, dump.name], "no partial file is left"
    assert _notes(dump) == ["note 0", "note 1", "note 2"]
    written = json.loads((backup / MANIFEST).read_text())
    assert written["format"] == 1
    assert (written["ragbot_version"], written["schema_revision"], written["backend"]) == (
        "0.1.0",
        head_revision(),
        "sqlite",
    )
    assert written["created_at"] == "2025-06-01T03:00:00+00:00"
    assert written["files"] == [
        {"name": dump.name, "size": dump.stat().st_size, "sha256": hashlib.sha256(dump.read_bytes()).hexdigest()}
    ]
    assert written["dump_tool"].startswith("sqlite3 ")
    assert (backup.stat().st_mode & 0o777, dump.stat().st_mode & 0o777) == (0o700, 0o600), "private, as the store"
    assert await check_backup(backup, config) == manifest


async def test_a_backup_taken_while_another_connection_writes_is_one_whole_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "ragbot.sqlite3"
    config = _store(path, rows=0)
    committed, writing, stop = [0], threading.Event(), threading.Event()

    def write() -> None:
        # Ten rows a transaction, all left in the write-ahead log: a copy of the database file alone would miss them.
        connection = sqlite3.connect(path, timeout=30)
        connection.execute("PRAGMA wal_autocheckpoint=0")
        while not stop.is_set():
            with connection:
                connection.executemany("INSERT INTO note (text) VALUES (?)", [("x" * 200,)] * 10)
            committed[0] += 10
            if committed[0] >= 2000:
                writing.set()
        connection.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert await asyncio.to_thread(writing.wait, 60)
        before = committed[0]
        await _backup(config, tmp_path / "backup")
    finally:
        stop.set()
        await asyncio.to_thread(writer.join)

    copied = len(_notes(tmp_path / "backup" / DUMPS["sqlite"]))
    assert copied >= before, "every transaction committed before the backup began is in it"
    assert copied % 10 == 0, "no transaction is in it by halves"


async def test_a_backup_refuses_a_used_directory_and_force_replaces_the_backup_there(tmp_path: Path) -> None:
    config = _store(tmp_path / "ragbot.sqlite3")
    backup = tmp_path / "backup"
    await _backup(config, backup)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")

    with pytest.raises(BackupError, match=r"already holds a backup \(made 2025-06-01 03:00 UTC\).*--force"):
        await _backup(config, backup)
    with pytest.raises(BackupError, match=r"other is not empty: give a new or empty directory"):
        await _backup(config, tmp_path / "other")
    with pytest.raises(BackupError, match=r"is where the store itself lives"):
        await _backup(config, tmp_path, force=True)

    connection = sqlite3.connect(tmp_path / "ragbot.sqlite3")
    with connection:
        connection.execute("INSERT INTO note (text) VALUES ('later')")
    connection.close()
    await _backup(config, backup, force=True)

    assert _notes(backup / DUMPS["sqlite"])[-1] == "later"
    assert sorted(p.name for p in backup.iterdir()) == [MANIFEST, DUMPS["sqlite"]]
    await check_backup(backup, config)


async def test_a_backup_of_no_store_says_so_and_writes_nothing(tmp_path: Path) -> None:
    config = DatabaseConfig(url=f"sqlite:///{tmp_path / 'data' / 'ragbot.sqlite3'}")

    with pytest.raises(BackupError, match=r"no SQLite store at .*ragbot\.sqlite3: nothing to back up"):
        await _backup(config, tmp_path / "backup")

    assert not (tmp_path / "backup").exists()


async def test_a_store_without_ragbots_schema_is_not_backed_up_and_nothing_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "ragbot.sqlite3"
    sqlite3.connect(path).close()
    path.write_bytes(b"")  # an empty file: SQLite reads it as an empty database

    with pytest.raises(BackupError, match=r"backup failed: .*holds no ragbot schema.*; nothing was kept"):
        await _backup(DatabaseConfig(url=f"sqlite:///{path}"), tmp_path / "backup")

    assert not (tmp_path / "backup").exists()


@pytest.fixture
async def made(tmp_path: Path) -> tuple[DatabaseConfig, Path]:
    """A store and a complete backup of it."""
    config = _store(tmp_path / "ragbot.sqlite3", revision=head_revision())
    await _backup(config, tmp_path / "backup")
    return config, tmp_path / "backup"


def _edit_manifest(directory: Path, **changes: object) -> None:
    path = directory / MANIFEST
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


async def test_a_backup_without_its_manifest_is_refused_as_unfinished(made: tuple[DatabaseConfig, Path]) -> None:
    config, backup = made
    (backup / MANIFEST).unlink()  # as a backup interrupted before its last step leaves it

    with pytest.raises(BackupError) as refused:
        await check_backup(backup, config)

    assert str(refused.value) == (
        f"{backup} holds no manifest.json: not a ragbot backup, or one that did not finish (a backup writes its "
        "manifest last); nothing was restored"
    )


async def test_a_changed_byte_in_the_dump_is_refused_as_a_checksum_mismatch(made: tuple[DatabaseConfig, Path]) -> None:
    config, backup = made
    dump = backup / DUMPS["sqlite"]
    data = bytearray(dump.read_bytes())
    data[len(data) // 2] ^= 0xFF
    dump.write_bytes(bytes(data))

    with pytest.raises(BackupError, match=r"^checksum mismatch: .*ragbot\.sqlite3 is not the file the backup wrote"):
        await check_backup(backup, config)


@pytest.mark.parametrize(
    ("damage", "refusal"),
    [
        (lambda dump: dump.write_bytes(dump.read_bytes()[:-10]), r"has \d+ bytes where the manifest says \d+"),
        (lambda dump: dump.unlink(), r"ragbot\.sqlite3 is missing \(the manifest lists it\)"),
        (lambda dump: (dump.parent / MANIFEST).write_text("{not json"), r"manifest\.json is damaged"),
        (lambda dump: _edit_manifest(dump.parent, format=2), r"manifest format 2, this ragbot reads 1"),
        (lambda dump: _edit_manifest(dump.parent, files=[]), r"lists no ragbot\.sqlite3: the backup is damaged"),
    ],
)
async def test_a_damaged_backup_is_refused(
    made: tuple[DatabaseConfig, Path], damage: Callable[[Path], object], refusal: str
) -> None:
    config, backup = made
    damage(backup / DUMPS["sqlite"])

    with pytest.raises(BackupError, match=refusal):
        await check_backup(backup, config)


async def test_a_backup_of_a_newer_schema_is_refused_naming_the_version_that_made_it(
    made: tuple[DatabaseConfig, Path],
) -> None:
    config, backup = made
    newer = f"{int(head_revision()) + 1:04d}"
    _edit_manifest(backup, schema_revision=newer, ragbot_version="0.2.0")

    with pytest.raises(BackupError) as refused:
        await check_backup(backup, config)

    assert str(refused.value) == (
        f"the backup's schema revision {newer} is newer than this ragbot's ({head_revision()}): it was made by ragbot "
        "0.2.0; restore it with that version or a later one; nothing was restored"
    )


async def test_a_backup_of_an_older_schema_is_accepted_to_be_migrated(tmp_path: Path) -> None:
    config = _store(tmp_path / "ragbot.sqlite3", revision="0012")
    await _backup(config, tmp_path / "backup")

    assert (await check_backup(tmp_path / "backup", config)).schema_revision == "0012"


async def test_a_sqlite_backup_is_refused_for_a_postgresql_store(made: tuple[DatabaseConfig, Path]) -> None:
    _, backup = made

    with pytest.raises(BackupError, match=r"^the backup is of a SQLite store, but this ragbot uses a PostgreSQL"):
        await check_backup(backup, DatabaseConfig(url="postgresql://ragbot@127.0.0.1:1/ragbot"))
