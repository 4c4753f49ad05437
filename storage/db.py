"""The relational store: an async engine over SQLite (default) or PostgreSQL, migrated on start."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import event, inspect, text
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlmodel.ext.asyncio.session import AsyncSession

from storage.errors import DatabaseUnavailable
from storage.private_files import private_dir
from storage.sqlite_writes import WriteLine

if TYPE_CHECKING:
    from alembic.config import Config

log = logging.getLogger(__name__)

_MIGRATIONS_DIR = Path(__file__).parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 30_000
_ASYNC_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg"}


@dataclass(frozen=True, slots=True)
class DatabaseConfig:
    """Where the relational store lives: any SQLAlchemy URL for SQLite or PostgreSQL."""

    url: str
    echo: bool = False
    # Connections kept open, and how many more may open under a burst. Each turn holds one only for its few short
    # statements, so a pool much smaller than the turns at once serves them (Settings sizes it from the turn limit).
    pool_size: int = 20
    max_overflow: int = 10
    # Seconds after which a pooled connection is replaced: a server or proxy closing idle connections then costs
    # no failed statement, without the round trip a pre-ping adds to every checkout.
    pool_recycle: int = 1800

    def async_url(self) -> URL:
        """The URL with the async driver this layer uses for its backend."""
        url = make_url(self.url)
        backend = "postgresql" if url.get_backend_name() == "postgres" else url.get_backend_name()
        return url.set(drivername=_ASYNC_DRIVERS[backend])

    @property
    def is_sqlite(self) -> bool:
        """Whether this is the embedded SQLite store."""
        return make_url(self.url).get_backend_name() == "sqlite"

    def sqlite_path(self) -> Path | None:
        """The SQLite file, or None for PostgreSQL and in-memory SQLite."""
        if not self.is_sqlite:
            return None
        database = make_url(self.url).database
        return Path(database) if database and database != ":memory:" else None

    def redacted(self) -> str:
        """The URL with its password hidden, for logs and doctor output."""
        return make_url(self.url).render_as_string(hide_password=True)


def _enable_sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets readers run while the ingestion worker writes; foreign keys are off by default.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    # A writer waits up to 30 s for the lock rather than failing at once: ingestion commits in short batches, so a
    # chat's write waits milliseconds behind it, and only a stuck writer makes one fail.
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()


# SQLite's own files beside the database: it makes them with the database file's mode, but older ones may differ.
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def _private_sqlite_file(path: Path) -> None:
    """The SQLite file and its companions readable by their owner only; the file made so before SQLite opens it
    (SQLite then makes its -wal and -shm with the same mode), its directory too when ragbot makes that."""
    private_dir(path.parent)
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    for file in (path, *(path.with_name(path.name + suffix) for suffix in SQLITE_COMPANIONS)):
        if file.exists() and stat.S_IMODE(file.stat().st_mode) & 0o077:
            os.chmod(file, 0o600)


_MIGRATION_LOCK = int.from_bytes(b"ragbot-m", "big") >> 1  # any fixed bigint, the same in every ragbot


def head_revision() -> str:
    """The newest migration's revision: its file name's number (0001_initial_schema.py is revision 0001)."""
    return max(path.name[:4] for path in (_MIGRATIONS_DIR / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))


def _at_head(connection: Connection) -> bool:
    """Whether the schema is the newest one already, read without importing alembic (~0.3 s of start-up)."""
    if not inspect(connection).has_table("alembic_version"):
        return False
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [head_revision()]


def _alembic_config(connection: Connection) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def _upgrade(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        # Instances starting together would each create the tables, and all but one fail on the others' types.
        # This lock lets one migrate while the rest wait, then find the schema at head; it ends with the transaction.
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
    if _at_head(connection):
        return
    from alembic import command

    command.upgrade(_alembic_config(connection), "head")


class Database:
    """An async engine and session factory; `open()` connects and migrates to the newest schema."""

    def __init__(self, config: DatabaseConfig) -> None:
        self.config = config
        self._engine: AsyncEngine | None = None
        self._sessions: async_sessionmaker[AsyncSession] | None = None
        # A SQLite file's writers queue here first (storage.sqlite_writes); None elsewhere.
        self.write_line: WriteLine | None = None

    @property
    def engine(self) -> AsyncEngine:
        """The open engine."""
        if self._engine is None:
            raise RuntimeError("Database.open() has not been awaited")
        return self._engine

    async def open(self, *, migrate: bool = True) -> None:
        """Connect, then create or migrate the schema (or only connect: a second engine on a migrated store)."""
        path = self.config.sqlite_path()
        if path is not None:
            _private_sqlite_file(path)
        # No pre-ping: it is one more round trip on every checkout. A connection the server dropped fails the one
        # statement that meets it, and SQLAlchemy then replaces every connection opened before (a restart).
        engine = create_async_engine(self.config.async_url(), echo=self.config.echo, **self._pool_options())
        if self.config.is_sqlite:
            event.listen(engine.sync_engine, "connect", _enable_sqlite_pragmas)
        if path is not None:  # an in-memory database is one connection: nothing to queue
            self.write_line = WriteLine(SQLITE_BUSY_TIMEOUT_MS / 1000)
            self.write_line.attach(engine.sync_engine)
        try:
            async with engine.begin() as connection:
                if migrate:
                    await connection.run_sync(_upgrade)
        except (SQLAlchemyError, OSError) as exc:
            await engine.dispose()
            raise DatabaseUnavailable(self.config.redacted(), str(exc).splitlines()[0]) from exc
        self._engine = engine
        self._sessions = async_sessionmaker(engine, class_=AsyncSession, expire_on_commit=False)
        log.info("db=open url=%s", self.config.redacted())

    def _pool_options(self) -> dict[str, int]:
        if self.config.is_sqlite and self.config.sqlite_path() is None:
            return {}  # an in-memory database lives in its one connection (SQLAlchemy's StaticPool)
        return {
            "pool_size": self.config.pool_size,
            "max_overflow": self.config.max_overflow,
            "pool_recycle": self.config.pool_recycle,
        }

    async def close(self) -> None:
        """Release every pooled connection."""
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None
            self._sessions = None

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session in a transaction: committed on success, rolled back on error."""
        if self._sessions is None:
            raise RuntimeError("Database.open() has not been awaited")
        async with self._sessions() as session, session.begin():
            yield session

    async def compact(self) -> None:
        """SQLite: rewrite the file without its free pages and empty its write-ahead log, so values replaced or
        deleted (plain tokens before they were sealed) are gone from the files too. PostgreSQL: nothing."""
        if not self.config.is_sqlite:
            return
        async with self.engine.connect() as connection:
            autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
            await autocommit.exec_driver_sql("VACUUM")
            await autocommit.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")

    async def ping(self) -> None:
        """Raise DatabaseUnavailable unless a trivial query succeeds."""
        try:
            async with self.engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        except SQLAlchemyError as exc:
            raise DatabaseUnavailable(self.config.redacted(), str(exc).splitlines()[0]) from exc
