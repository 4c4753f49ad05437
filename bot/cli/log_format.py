"""How `ragbot` writes its log: text lines for a terminal, or JSON lines (LOG_FORMAT=json) for a log collector."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Final

TEXT_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s turn=%(turn)s %(message)s"


class JsonLines(logging.Formatter):
    """One JSON object per line: time, level, logger, turn and job ids, the message, and the error if any."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "turn": getattr(record, "turn", "-"),
            "job": getattr(record, "job", "-"),
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def formatter(log_format: str) -> logging.Formatter:
    """The formatter for LOG_FORMAT (`text` or `json`)."""
    return JsonLines() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
