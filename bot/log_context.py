"""The job a log line belongs to: a context variable every line of an ingestion job's work carries (beside the
turn's, bot.chat.turn_log)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

_JOB: Final[ContextVar[str]] = ContextVar("ragbot_job", default="-")


def current_job() -> str:
    """The id of the job this code runs for, or "-" outside any job."""
    return _JOB.get()


@contextmanager
def job_scope(job_id: str) -> Iterator[None]:
    """Run the body as the work of job `job_id`: its log lines carry `job=<id>`."""
    token = _JOB.set(job_id)
    try:
        yield
    finally:
        _JOB.reset(token)
