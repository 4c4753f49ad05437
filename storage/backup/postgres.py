"""The PostgreSQL store's backup: pg_dump's custom format, restored by pg_restore in one transaction.

pg_dump reads one snapshot, so instances serving meanwhile change nothing in it. A dump is read by a pg_restore at
least as new as the pg_dump that wrote it, and each tool talks to servers up to its own major version: the tool
chosen is the oldest installed one that is new enough for both (Debian keeps one per major version in
/usr/lib/postgresql/N/bin, as scripts/install-postgres.sh installs them).
"""

from __future__ import annotations

import asyncio
import glob
import os
import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, make_url
from sqlmodel import SQLModel

import storage.models  # noqa: F401  (registers ragbot's tables on SQLModel.metadata)
from storage.db import Database, DatabaseConfig
from storage.errors import BackupError, DatabaseUnavailable

_VERSION = re.compile(r"\(PostgreSQL\) (\d+)(?:\.(\d+))?")
_LISTED_TABLE = re.compile(r"^\d+; \d+ \d+ TABLE (?!DATA )\S+ (\S+) ")


@dataclass(frozen=True, slots=True)
class PgTool:
    """An installed PostgreSQL client program and its version."""

    path: str
    version: str

    @property
    def major(self) -> int:
        """The major version (15 of 15.8)."""
        return int(self.version.split(".")[0])

    def __str__(self) -> str:
        return f"{Path(self.path).name} {self.version}"


@dataclass(frozen=True, slots=True)
class ServerFacts:
    """What a backup or restore needs to know of the server and the database on it."""

    major: int
    revision: str | None
    tables: frozenset[str]


async def _run(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(errors="replace"), err.decode(errors="replace")


async def find_tool(name: str, at_least: int) -> PgTool:
    """The oldest installed `name` (pg_dump, pg_restore) of major version `at_least` or later."""
    found: list[PgTool] = []
    for path in [*sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}")), shutil.which(name)]:
        if path is None:
            continue
        try:
            code, out, _ = await _run([path, "--version"])
        except OSError:
            continue
        if code == 0 and (match := _VERSION.search(out)):
            found.append(PgTool(path, ".".join(part for part in match.groups() if part is not None)))
    fitting = sorted((tool for tool in found if tool.major >= at_least), key=lambda tool: tool.major)
    if not fitting:
        have = ", ".join(sorted({str(tool) for tool in found})) or "none"
        raise BackupError(
            f"{name} {at_least} or newer is needed for this PostgreSQL (found: {have}): "
            f"install postgresql-client-{at_least} or a later one"
        )
    return fitting[0]


def libpq_target(config: DatabaseConfig) -> tuple[str, dict[str, str]]:
    """The database as a libpq connection URI without its password, and the environment carrying the password
    (so it shows in no process list)."""
    url = make_url(config.url)
    env = {"PGPASSWORD": url.password} if url.password else {}
    query = dict(url.query)
    if "ssl" in query and "sslmode" not in query:  # asyncpg's name for libpq's sslmode
        query["sslmode"] = query.pop("ssl")
    plain = url.set(drivername="postgresql", password=None, query=query)
    return plain.render_as_string(hide_password=False), env


async def server_facts(config: DatabaseConfig) -> ServerFacts:
    """The server's major version, the database's schema revision (None without one) and its tables."""
    db = Database(replace(config, pool_size=1, max_overflow=0))
    try:
        await db.open(migrate=False)
        async with db.engine.connect() as connection:
            number = (await connection.execute(text("SHOW server_version_num"))).scalar_one()
            tables: list[str] = await connection.run_sync(lambda sync: inspect(sync).get_table_names())
            revision = await connection.run_sync(_revision) if "alembic_version" in tables else None
    except DatabaseUnavailable as exc:
        raise BackupError(f"cannot reach DATABASE_URL's database: {exc.reason}") from exc
    finally:
        await db.close()
    return ServerFacts(int(number) // 10000, revision, frozenset(tables))


def _revision(connection: Connection) -> str | None:
    rows = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return str(rows[0]) if len(rows) == 1 else None


async def dump_postgres(config: DatabaseConfig, facts: ServerFacts, target: Path) -> PgTool:
    """pg_dump the database into the new file `target` (mode 0600); the tool that wrote it.

    Raises BackupError with pg_dump's own reason when it fails (a full disk); `target` is the caller's to remove.
    """
    tool = await find_tool("pg_dump", facts.major)
    os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    conninfo, env = libpq_target(config)
    code, _, err = await _run(
        [tool.path, "--format=custom", "--no-password", f"--file={target}", f"--dbname={conninfo}"], env
    )
    if code != 0:
        raise BackupError(_last_line(err, f"{tool} exited with {code}"))
    return tool


async def archive_tables(tool: PgTool, archive: Path) -> set[str]:
    """The tables a custom-format archive creates."""
    code, out, err = await _run([tool.path, "--list", str(archive)])
    if code != 0:
        raise BackupError(f"{tool} cannot read {archive}: {_last_line(err, f'exit {code}')}; nothing was restored")
    return {match.group(1) for line in out.splitlines() if (match := _LISTED_TABLE.match(line))}


async def restore_postgres(config: DatabaseConfig, archive: Path, dumped_by: str) -> None:
    """Replace the database's contents with the archive's, in one transaction (on failure nothing of it stays).

    The tables of ragbot's a later schema added and the archive lacks are dropped first: its DROPs reach only
    what it holds, and those tables' keys would keep the older ones from being dropped.
    """
    facts = await server_facts(config)
    dump_major = int(match.group(1)) if (match := re.search(r"(\d+)", dumped_by)) else facts.major
    tool = await find_tool("pg_restore", max(facts.major, dump_major))
    leftovers = (set(SQLModel.metadata.tables) & facts.tables) - await archive_tables(tool, archive)
    if leftovers:
        await _drop_tables(config, sorted(leftovers))
    conninfo, env = libpq_target(config)
    args = [tool.path, "--clean", "--if-exists", "--single-transaction", "--exit-on-error", "--no-owner", "--no-acl"]
    code, _, err = await _run([*args, "--no-password", f"--dbname={conninfo}", str(archive)], env)
    if code != 0:
        raise BackupError(f"{tool} failed, so the database keeps what it held: {_last_line(err, f'exit {code}')}")


async def _drop_tables(config: DatabaseConfig, names: list[str]) -> None:
    db = Database(replace(config, pool_size=1, max_overflow=0))
    try:
        await db.open(migrate=False)
        async with db.engine.begin() as connection:
            for name in names:
                await connection.execute(text(f'DROP TABLE IF EXISTS "{name}" CASCADE'))
    finally:
        await db.close()


def _last_line(stderr: str, otherwise: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1] if lines else otherwise
