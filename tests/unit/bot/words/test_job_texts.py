"""How /jobs says a job: when it last moved, relative to now, and its failure reason in one short line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.words.messages import jobs_list, short_reason
from storage.records import JobRecord

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("reason", "short"),
    [
        (
            "no text found in the PDF (scanned images?): run OCR on it first",
            "no text found in the PDF (scanned images?): run OCR on it first",
        ),
        ("The file is empty. Upload it again with its content.", "The file is empty."),
        ("row 3: there is no answer; row 7: the question is empty", "row 3: there is no answer"),
        ("first line\nsecond line", "first line"),
        ("文件是空的。请重新上传。", "文件是空的。"),
        ("word " * 60, ("word " * 40)[:159].rsplit(" ", 1)[0] + "…"),
        ("", ""),
    ],
)
def test_a_failure_reason_is_shown_as_its_first_sentence_on_one_short_line(reason: str, short: str) -> None:
    assert short_reason(reason) == short


def _job(ended: timedelta) -> JobRecord:
    return JobRecord(
        "j",
        "kb",
        "file",
        "/srv/docs/guide.md",
        "succeeded",
        "done",
        1,
        1,
        "",
        "",
        {},
        {"chunks": 2},
        1,
        NOW - ended - timedelta(seconds=5),
        None,
        NOW - ended,
    )


@pytest.mark.parametrize(
    ("ended", "when"),
    [
        (timedelta(seconds=20), "just now"),
        (timedelta(minutes=5, seconds=30), "5 min ago"),
        (timedelta(hours=3, minutes=59), "3 h ago"),
        (timedelta(days=1, hours=2), "1 day ago"),
        (timedelta(days=9), "9 days ago"),
    ],
)
def test_a_job_says_how_long_ago_it_ended(ended: timedelta, when: str) -> None:
    assert jobs_list([_job(ended)], {"kb": "docs"}, NOW, "en") == f"- `guide.md` → docs, {when}: indexed, 2 passages."
