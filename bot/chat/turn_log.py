"""A turn id on every log line of a turn: a context variable and the logging filter that reads it."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

from bot.log_context import current_job

_TURN: Final[ContextVar[str]] = ContextVar("ragbot_turn", default="-")


def current_turn() -> str:
    """The id of the turn this code runs in, or "-" outside any turn."""
    return _TURN.get()


@contextmanager
def turn_scope(turn_id: str | None = None) -> Iterator[str]:
    """Run the body as one turn: its log lines (and tasks it starts) carry `turn=<id>`."""
    token = _TURN.set(turn_id or uuid.uuid4().hex[:12])
    try:
        yield _TURN.get()
    finally:
        _TURN.reset(token)


class TurnIdFilter(logging.Filter):
    """Adds `record.turn` and `record.job` so a format string (or the JSON lines) can print them."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.turn = _TURN.get()
        record.job = current_job()
        return True
