"""bench.log_counts: a service's log records counted once each, whatever their tracebacks repeat."""

from __future__ import annotations

import logging
from pathlib import Path

from bench.log_counts import IN_INGESTION, TallyHandler, tally_log, total

_LOCKED_TRACEBACK = """\
2026-11-26 18:57:16,160 ERROR bot.chat.manager turn=- turn=failed_before_answer platform=web
Traceback (most recent call last):
sqlite3.OperationalError: database is locked

The above exception was the direct cause of the following exception:

sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) database is locked
"""
_POOL_TIMEOUT = (
    "2026-11-26 18:57:17,001 WARNING bot.chat.manager turn=ab12 turn=failed conversation=c1 request=r1 "
    "reason=QueuePool limit of size 5 overflow 10 reached, connection timed out, timeout 30.00\n"
)
_QUIET = "2026-11-26 18:57:18,002 INFO adapters.web.app turn=- web=client_gone\n"


def test_a_traceback_that_repeats_the_lock_counts_as_one_record(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text(_LOCKED_TRACEBACK + _POOL_TIMEOUT + _QUIET)

    tally = tally_log(log, 0)

    assert (tally.locked, tally.pool_timeouts) == (1, 1)
    assert tally.warnings == {
        "ERROR bot.chat.manager turn=failed_before_answer": 1,
        "WARNING bot.chat.manager turn=failed": 1,
    }


def test_only_the_records_after_the_offset_count(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text(_LOCKED_TRACEBACK)
    offset = log.stat().st_size
    with log.open("a") as handle:
        handle.write(_QUIET + _POOL_TIMEOUT)

    tally = tally_log(log, offset)

    assert (tally.locked, tally.pool_timeouts) == (0, 1)


def test_the_handler_keeps_the_background_ingestions_records_apart() -> None:
    handler = TallyHandler()
    logger = logging.getLogger("bench-test-log-counts")
    logger.addHandler(handler)
    try:
        logger.warning("turn=failed reason=database is locked")
        token = IN_INGESTION.set(True)
        try:
            logger.error("ingest=failed reason=database is locked")
        finally:
            IN_INGESTION.reset(token)
    finally:
        logger.removeHandler(handler)

    assert total(handler.chat).locked == 1
    assert total(handler.ingestion).warnings == {"ERROR bench-test-log-counts ingest=failed": 1}
