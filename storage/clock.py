"""The database's clock: leases are set and compared in SQL, so no process's own clock (or its skew) counts.

Every ragbot process on one database reads the same time here. PostgreSQL's `statement_timestamp()` is the
start of the statement (not of the transaction, as `now()` is, which a long transaction would hold back);
SQLite's `'now'` is the host's UTC clock, shared by every process on the one host that opens the file, written
in the text form SQLAlchemy stores datetimes in (`YYYY-MM-DD HH:MM:SS.ffffff`), so stored and computed times
compare as text.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, literal
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement
from sqlmodel import select
from sqlmodel.sql.sqltypes import UTCDateTime

from storage.db import Database


class DatabaseTime(FunctionElement[datetime]):
    """The database's time now, plus an offset in seconds (a bound parameter)."""

    type = UTCDateTime()
    inherit_cache = True
    name = "database_time"


def database_time(later: float = 0.0) -> DatabaseTime:
    """The database's current time, `later` seconds on, as a SQL expression (for leases' expiry and comparison)."""
    return DatabaseTime(literal(float(later), Float()))


async def database_now(db: Database) -> datetime:
    """The database's current time, read once."""
    async with db.session() as session:
        return (await session.exec(select(database_time()))).one()


@compiles(DatabaseTime, "postgresql")
def _postgresql(element: DatabaseTime, compiler: SQLCompiler, **kw: Any) -> str:
    return f"(statement_timestamp() + make_interval(secs => {compiler.process(element.clauses, **kw)}))"


@compiles(DatabaseTime, "sqlite")
def _sqlite(element: DatabaseTime, compiler: SQLCompiler, **kw: Any) -> str:
    # %f is seconds with milliseconds: three zeros make the microseconds SQLAlchemy writes.
    later = compiler.process(element.clauses, **kw)
    return f"strftime('%Y-%m-%d %H:%M:%f000', 'now', printf('%+.6f seconds', {later}))"
