"""LOG_FORMAT=json: one JSON object per log line, carrying the turn's and the job's ids."""

from __future__ import annotations

import io
import json
import logging

from bot.chat.turn_log import TurnIdFilter, turn_scope
from bot.cli.log_format import formatter
from bot.log_context import job_scope


def _logger(log_format: str) -> tuple[logging.Logger, io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter(log_format))
    handler.addFilter(TurnIdFilter())
    logger = logging.getLogger(f"test.log_format.{log_format}")
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger, out


def test_json_lines_carry_the_turn_and_the_job_and_an_error_whole() -> None:
    logger, out = _logger("json")
    with turn_scope("t-1"):
        logger.info("stage=SEARCH ms=%d", 12)
    with job_scope("j-7"):
        try:
            raise ValueError("bad page")
        except ValueError:
            logger.exception("job=failed")
    logger.warning("outside")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(line["turn"], line["job"], line["message"]) for line in lines] == [
        ("t-1", "-", "stage=SEARCH ms=12"),
        ("-", "j-7", "job=failed"),
        ("-", "-", "outside"),
    ]
    assert lines[1]["level"] == "ERROR"
    assert "ValueError: bad page" in lines[1]["error"]
    assert lines[0]["time"].endswith("+00:00")


def test_text_lines_keep_their_format() -> None:
    logger, out = _logger("text")
    with turn_scope("t-2"):
        logger.info("hello")
    assert out.getvalue().rstrip().endswith("INFO test.log_format.text turn=t-2 hello")
