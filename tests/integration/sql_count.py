"""Counting the SQL statements a piece of code sends, through SQLAlchemy's before_cursor_execute event."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event

from storage.db import Database


@contextmanager
def count_statements(db: Database) -> Iterator[list[str]]:
    """The statements sent to `db` inside the block, in order (transaction control excluded: it is no read)."""
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        sent.append(statement)

    engine = db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)
