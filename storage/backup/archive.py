"""A backup directory of the relational store: its dump, then its manifest; checked whole before it is restored.

The search index is not in it: SQL holds every chunk, FAQ and cached vector, and a restore rebuilds the index from
them, so the two stores agree by construction.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import delete, inspect
from sqlalchemy.exc import SQLAlchemyError

from storage.backup.manifest import MANIFEST, Manifest, describe_file, read_manifest, verify_files, write_manifest
from storage.backup.postgres import dump_postgres, restore_postgres, server_facts
from storage.backup.sqlite import dump_sqlite, dump_tool, install_sqlite
from storage.db import SQLITE_COMPANIONS, Database, DatabaseConfig, head_revision
from storage.errors import BackupError, DatabaseUnavailable, first_line
from storage.models import Lease
from storage.private_files import private_dir
from storage.records import LeaseRecord
from storage.repos.leases import LeaseRepo

DUMPS = {"sqlite": "ragbot.sqlite3", "postgresql": "ragbot.pgdump"}
"""The dump's file name in a backup directory, by backend."""
_BACKEND_NAMES = {"sqlite": "a SQLite store", "postgresql": "a PostgreSQL database (DATABASE_URL)"}


def backend_of(config: DatabaseConfig) -> str:
    """ "sqlite" or "postgresql"."""
    return "sqlite" if config.is_sqlite else "postgresql"


def _sqlite_file(config: DatabaseConfig) -> Path:
    path = config.sqlite_path()
    if path is None:
        raise BackupError("the database is in memory: there is nothing on disk to back up or restore")
    return path


async def make_backup(
    config: DatabaseConfig,
    directory: Path,
    *,
    ragbot_version: str,
    force: bool = False,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Manifest:
    """Dump the store into `directory` and write its manifest last; on any failure remove what this wrote.

    `directory` must be new or empty unless `force`: then the backup there is replaced, and kept until the new one
    is whole. A failed backup leaves either that older backup or none of the backup's files, never a manifest
    over a partial dump.
    """
    backend = backend_of(config)
    name = DUMPS[backend]
    source: Path | None = None
    facts = None
    if backend == "sqlite":
        source = await asyncio.to_thread(_sqlite_source, config, directory / name)
    else:
        facts = await server_facts(config)
        if facts.revision is None:
            raise BackupError("DATABASE_URL's database holds no ragbot schema: nothing to back up")
    created, previous = await asyncio.to_thread(_prepare, directory, force)
    partial = directory / f".{name}.partial"
    created_at = clock()
    try:
        if source is not None:
            revision = await asyncio.to_thread(dump_sqlite, source, partial)
            tool = dump_tool()
        else:
            assert facts is not None
            tool = str(await dump_postgres(config, facts, partial))
            revision = str(facts.revision)
            if (await server_facts(config)).revision != revision:
                raise BackupError("the schema was migrated while the backup ran (an upgrade started): run it again")
        entry = await asyncio.to_thread(describe_file, partial, name)
        manifest = Manifest(ragbot_version, revision, backend, created_at, (entry,), tool)
        await asyncio.to_thread(_put_in_place, directory, partial, manifest, previous)
    except BaseException as exc:
        left = _remove_unfinished(directory, name, created=created)
        if isinstance(exc, OSError | sqlite3.Error | BackupError):
            raise BackupError(f"backup failed: {_reason(exc)}; {left}") from exc
        raise
    return manifest


def _sqlite_source(config: DatabaseConfig, dump: Path) -> Path:
    """The SQLite file to back up, once it is known to exist and not to be where its dump would go."""
    source = _sqlite_file(config)
    if not source.is_file():
        raise BackupError(f"no SQLite store at {source}: nothing to back up (is RAGBOT_DATA_DIR right?)")
    if dump.resolve() == source.resolve():
        raise BackupError(f"{dump.parent} is where the store itself lives: give another directory for the backup")
    return source


def _prepare(directory: Path, force: bool) -> tuple[bool, Manifest | None]:
    """Refuse a directory already used unless `force`; create it (private) otherwise. Whether it was created, and
    the backup it holds, if any."""
    created = not directory.exists()
    if directory.exists() and not directory.is_dir():
        raise BackupError(f"{directory} is a file: give a directory for the backup")
    previous: Manifest | None = None
    if (directory / MANIFEST).exists():
        try:
            previous = read_manifest(directory)
        except BackupError:
            previous = None  # a damaged one is replaced like any other
    if directory.exists() and any(directory.iterdir()) and not force:
        if (directory / MANIFEST).exists():
            made = f" (made {previous.created_at:%Y-%m-%d %H:%M} UTC)" if previous else ""
            raise BackupError(
                f"{directory} already holds a backup{made}: give a new or empty directory, or add --force to replace "
                "it (the old one is kept until the new one is complete)"
            )
        raise BackupError(
            f"{directory} is not empty: give a new or empty directory (or add --force to write beside what is there)"
        )
    private_dir(directory)
    return created, previous


def _put_in_place(directory: Path, partial: Path, manifest: Manifest, previous: Manifest | None) -> None:
    """Replace the older backup, if any, by the complete new dump: the old manifest goes first, the new one last."""
    (directory / MANIFEST).unlink(missing_ok=True)
    partial.replace(directory / manifest.files[0].name)
    new = {file.name for file in manifest.files}
    for file in previous.files if previous else ():
        if file.name not in new and file.name != MANIFEST and Path(file.name).name == file.name:
            (directory / file.name).unlink(missing_ok=True)
    write_manifest(directory, manifest)


def _remove_unfinished(directory: Path, name: str, *, created: bool) -> str:
    """Remove what an interrupted backup wrote; what the directory holds afterwards, in words."""
    partial = f".{name}.partial"
    # SQLite may leave the copy's rollback journal beside it when a write failed.
    for leftover in (partial, *(partial + suffix for suffix in SQLITE_COMPANIONS), f".{MANIFEST}.partial"):
        (directory / leftover).unlink(missing_ok=True)
    if (directory / MANIFEST).exists():
        return f"the backup already in {directory} is kept"
    (directory / name).unlink(missing_ok=True)  # a dump no manifest vouches for is no backup
    if created and not any(directory.iterdir()):
        directory.rmdir()
        return "nothing was kept"
    return f"{directory} holds no backup (no {MANIFEST})"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, sqlite3.Error) and getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
        return f"no space left on the device (SQLite: {exc})"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return first_line(exc)


async def check_backup(directory: Path, config: DatabaseConfig) -> Manifest:
    """The backup in `directory` once it is known whole and fit for this ragbot and its store; BackupError saying
    why not otherwise (nothing is touched either way)."""
    manifest = read_manifest(directory)
    backend = backend_of(config)
    if manifest.backend != backend:
        raise BackupError(
            f"the backup is of {_BACKEND_NAMES.get(manifest.backend, manifest.backend)}, but this ragbot uses "
            f"{_BACKEND_NAMES[backend]}: restore it with the same kind of store; nothing was restored"
        )
    _check_revision(manifest)
    if [file.name for file in manifest.files] != [DUMPS[backend]]:
        raise BackupError(f"{directory / MANIFEST} lists no {DUMPS[backend]}: the backup is damaged")
    if backend == "sqlite":
        _sqlite_file(config)
    await asyncio.to_thread(verify_files, directory, manifest)
    return manifest


def _check_revision(manifest: Manifest) -> None:
    """Refuse a schema this code cannot bring to its own (an older one is migrated after the restore)."""
    head, revision = head_revision(), manifest.schema_revision
    if not re.fullmatch(r"\d{4}", revision):
        raise BackupError(f"the backup's schema revision {revision!r} is not one of ragbot's: nothing was restored")
    if revision > head:
        raise BackupError(
            f"the backup's schema revision {revision} is newer than this ragbot's ({head}): it was made by ragbot "
            f"{manifest.ragbot_version}; restore it with that version or a later one; nothing was restored"
        )


async def restore_database(directory: Path, manifest: Manifest, config: DatabaseConfig) -> None:
    """Replace the store with the checked backup's, migrate it to this ragbot's schema, and forget the leases of the
    processes that ran when it was made (none of them runs on the restored store)."""
    try:
        if manifest.backend == "sqlite":
            await asyncio.to_thread(install_sqlite, directory / DUMPS["sqlite"], _sqlite_file(config))
        else:
            await restore_postgres(config, directory / DUMPS["postgresql"], manifest.dump_tool)
    except (OSError, sqlite3.Error) as exc:
        raise BackupError(f"cannot put the backup in place: {_reason(exc)}; the store is as it was") from exc
    db = Database(replace(config, pool_size=1, max_overflow=0))
    try:
        await db.open()
        async with db.session() as session:
            await session.exec(delete(Lease))
    except (DatabaseUnavailable, SQLAlchemyError) as exc:
        raise BackupError(f"the backup is in place, but migrating it failed: {first_line(exc)}") from exc
    finally:
        await db.close()


async def live_leases(config: DatabaseConfig, prefix: str) -> list[LeaseRecord]:
    """The live leases named `prefix`… in the configured store as it is now (none when there is no store yet)."""
    if config.is_sqlite and not _sqlite_file(config).is_file():
        return []
    db = Database(replace(config, pool_size=1, max_overflow=0))
    try:
        await db.open(migrate=False)
        async with db.engine.connect() as connection:
            if not await connection.run_sync(lambda sync: inspect(sync).has_table(Lease.__tablename__)):
                return []
        return await LeaseRepo(db).live(prefix)
    except DatabaseUnavailable as exc:
        raise BackupError(f"cannot open the store to restore into: {exc.reason}") from exc
    finally:
        await db.close()
