"""The relational store a benchmark run uses: SQLite in its data dir, or a fresh database on a PostgreSQL server.

PostgreSQL is RAGBOT_BENCH_DATABASE_URL's server when set (its database part is ignored: the bench creates its own
databases there), else a throw-away cluster started as the tests start theirs (harness/postgres.py).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import ExitStack, asynccontextmanager
from typing import Any

from sqlalchemy.engine import make_url

from harness.postgres import create_database as new_database
from harness.postgres import running_postgres

DATABASES = ("sqlite", "postgres")

# A fresh database's URL for DATABASE_URL, or None for SQLite in the run's data dir.
FreshDatabase = Callable[[str], Coroutine[Any, Any, str | None]]


def chosen(option: str) -> list[str]:
    """The databases `--database` names: sqlite, postgres or both."""
    return list(DATABASES) if option == "both" else [option]


async def _no_url(label: str) -> str | None:
    return None


@asynccontextmanager
async def databases(kind: str) -> AsyncIterator[FreshDatabase]:
    """A maker of fresh databases of `kind` (one per run), with the PostgreSQL server up while the block runs."""
    if kind == "sqlite":
        yield _no_url
        return
    with ExitStack() as stack:
        external = os.environ.get("RAGBOT_BENCH_DATABASE_URL")
        base = _server_url(external) if external else stack.enter_context(running_postgres())

        async def fresh(label: str) -> str | None:
            return await create_database(base, label)

        yield fresh


async def create_database(base: str, label: str) -> str:
    """A new database named after `label` on the PostgreSQL server at `base` (no database part): its URL."""
    return await new_database(base, f"bench_{label}")


def _server_url(url: str) -> str:
    """The server part of a PostgreSQL URL (no database), as asyncpg and DATABASE_URL take it."""
    parsed = make_url(url).set(drivername="postgresql", database=None)
    return parsed.render_as_string(hide_password=False).rstrip("/")
