"""What the service logged during a burst, counted per log record: "database is locked", pool timeouts, warnings.

A record is one logging call with its traceback (chained causes included), so one failure counts once however
many lines or chained exceptions repeat its message. (a) counts its own records with a logging handler; (b) reads
`ragbot serve`'s log, whose records start with its format's "date time LEVEL logger turn=ID" prefix.
"""

from __future__ import annotations

import contextvars
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

# SQLite's busy error ("database is locked", also "database table is locked").
_LOCKED = re.compile(r"database (table )?is locked")
# SQLAlchemy's QueuePool/AsyncAdaptedQueuePool: "QueuePool limit of size 5 overflow 10 reached, connection timed out".
_POOL_TIMEOUT = re.compile(r"QueuePool limit of size|connection timed out, timeout")
_RECORD_START = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (DEBUG|INFO|WARNING|ERROR|CRITICAL) (\S+) ")
# ragbot's log format (bot.cli.main): "date time LEVEL logger turn=ID message".
_KEY = re.compile(r"^\S+ \S+ (WARNING|ERROR|CRITICAL) (\S+) turn=\S+ (\S+)")

# Set inside the bench's own background ingestion, so its records are told apart from the chat's (scenario a).
IN_INGESTION: contextvars.ContextVar[bool] = contextvars.ContextVar("bench_in_ingestion", default=False)


@dataclass
class LogTally:
    """Records that mention a locked SQLite database or a pool timeout; WARNING-or-worse records by kind."""

    locked: int = 0
    pool_timeouts: int = 0
    warnings: Counter[str] = field(default_factory=Counter)

    def add(self, text: str, key: str | None) -> None:
        """Count one record: its whole text (message and traceback) and its kind, if WARNING or worse."""
        self.locked += bool(_LOCKED.search(text))
        self.pool_timeouts += bool(_POOL_TIMEOUT.search(text))
        if key is not None:
            self.warnings[key] += 1

    def __iadd__(self, other: LogTally) -> LogTally:
        self.locked += other.locked
        self.pool_timeouts += other.pool_timeouts
        self.warnings.update(other.warnings)
        return self


def tally_log(path: Path, offset: int) -> LogTally:
    """The records a ragbot process wrote to its log file from byte `offset` on."""
    with path.open("rb") as handle:
        handle.seek(offset)
        lines = handle.read().decode(errors="replace").splitlines()
    tally = LogTally()
    record: list[str] = []
    for line in [*lines, "0000-00-00 00:00:00,000 INFO end "]:
        if _RECORD_START.match(line) and record:
            match = _KEY.match(record[0])
            tally.add("\n".join(record), f"{match[1]} {match[2]} {match[3]}" if match else None)
            record = []
        record.append(line)
    return tally


class TallyHandler(logging.Handler):
    """A handler that keeps every record's counts, chat and the bench's background ingestion apart (a)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.chat: list[LogTally] = []
        self.ingestion: list[LogTally] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Count the record (its message and any traceback)."""
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        tally = LogTally()
        first = text.split(" ", 1)[0] if text else ""
        tally.add(text, f"{record.levelname} {record.name} {first}")
        (self.ingestion if IN_INGESTION.get() else self.chat).append(tally)


def total(tallies: list[LogTally]) -> LogTally:
    """The tallies added up."""
    summed = LogTally()
    for tally in tallies:
        summed += tally
    return summed
