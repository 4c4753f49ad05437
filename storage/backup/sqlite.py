"""The SQLite store's backup: SQLite's online backup API into a new file, and that file put back in place.

The copy is taken in one step, inside one read transaction: in WAL mode a running `ragbot serve` keeps writing
meanwhile, and the copy is the database as it was when the step began.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from storage.backup.manifest import sync_directory
from storage.db import SQLITE_BUSY_TIMEOUT_MS, SQLITE_COMPANIONS
from storage.errors import BackupError
from storage.private_files import private_dir

# As long as ragbot's own connections wait for SQLite's lock.
_BUSY_SECONDS = SQLITE_BUSY_TIMEOUT_MS / 1000


def dump_tool() -> str:
    """What writes the copy: the SQLite library this Python links."""
    return f"sqlite3 {sqlite3.sqlite_version}"


def dump_sqlite(source: Path, target: Path) -> str:
    """Copy the database at `source` into the new file `target` (mode 0600); its schema revision.

    Raises BackupError when `source` holds no ragbot schema; OSError or sqlite3.Error when writing fails (a full
    disk). `target` is left to the caller to remove then.
    """
    os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    reader = sqlite3.connect(source, timeout=_BUSY_SECONDS)
    try:
        copy = sqlite3.connect(target)
        try:
            reader.backup(copy)  # pages=-1: the whole database in one step, one snapshot
            # The copy stands alone: no write-ahead log beside it to lose or to forget.
            copy.execute("PRAGMA journal_mode=DELETE")
            revision = _revision(copy, source)
        finally:
            copy.close()
    finally:
        reader.close()
    _sync_file(target)
    return revision


def _revision(connection: sqlite3.Connection, source: Path) -> str:
    try:
        rows = connection.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        rows = []
    if len(rows) != 1:
        raise BackupError(f"{source} holds no ragbot schema (no alembic_version): nothing to back up")
    return str(rows[0][0])


def install_sqlite(backup: Path, target: Path) -> None:
    """Put a copy of `backup` in place of the database at `target`, whole or not at all.

    The copy is written beside the target and renamed over it. The old database's journal and write-ahead log
    go first: left beside the new file, SQLite would replay the old log into it.
    """
    private_dir(target.parent)
    temporary = target.with_name(f".{target.name}.restoring")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with backup.open("rb") as source, open(descriptor, "wb") as copy:
            shutil.copyfileobj(source, copy)
            copy.flush()
            os.fsync(copy.fileno())
        _check_whole(temporary)
        for suffix in SQLITE_COMPANIONS:
            target.with_name(target.name + suffix).unlink(missing_ok=True)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    sync_directory(target.parent)


def _check_whole(path: Path) -> None:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        result = connection.execute("PRAGMA quick_check").fetchone()
    except sqlite3.DatabaseError as exc:
        result = (str(exc),)
    finally:
        connection.close()
    if result is None or result[0] != "ok":
        raise BackupError(f"the backup's database fails SQLite's check ({result}): nothing was restored")


def _sync_file(path: Path) -> None:
    with path.open("rb") as file:
        os.fsync(file.fileno())
