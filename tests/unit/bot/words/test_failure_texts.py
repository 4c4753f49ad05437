"""Why an ingestion failed, in the chat's language: rag gives each failure a reason id and details, and every
catalogue words every reason (the English error text stays for operators)."""

from __future__ import annotations

import io
import re
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.knowledge.jobs import failure_data
from bot.words import catalogue as i18n
from bot.words import messages
from rag.errors import ExtractionError, FaqImportError
from rag.ingest.extract import ExtractLimits, extract
from rag.ingest.faq_sheet import parse_faq_file
from rag.ingest.fetch import fetch_url
from storage.records import JobRecord
from tests.support.documents import make_docx, make_pdf, make_pdf_without_text, make_zip, make_zip_bomb

ROOT = Path(__file__).resolve().parents[4]
_ZIP_OF_TEXT = make_zip({"notes.txt": b"not a document"})


def _odt() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text")
    return buffer.getvalue()


# (file, name, limits or None): what a person uploads that ragbot cannot ingest, and the reason rag gives.
BAD_FILES: list[tuple[bytes, str, ExtractLimits | None, str]] = [
    (b"", "empty.txt", None, "empty"),
    (b"   \n\n  ", "blank.md", None, "blank"),
    (make_pdf_without_text(), "scan.pdf", None, "no_text_pdf"),
    (b"%PDF-1.7\n" + b"garbage " * 100, "broken.pdf", None, "damaged_pdf"),
    (make_pdf(["a", "b", "c"]), "long.pdf", ExtractLimits(max_pages=2), "too_many_pages"),
    (b'{"a": [1, 2', "data.json", None, "damaged_json"),
    (b"[]", "data.json", None, "no_text_json"),
    (b"x" * 2000, "big.txt", ExtractLimits(max_bytes=999), "too_large"),
    (make_docx(), "a.docx", ExtractLimits(max_unpacked_bytes=16_000), "unpacks_too_large"),
    (make_zip_bomb(unpacked_mb=20), "invoice.docx", None, "compressed_too_much"),
    (b"GIF89a" + bytes(range(256)) * 4, "photo.gif", None, "unsupported_image"),
    (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "photo.png", None, "damaged_image"),
    (bytes(range(256)) * 8, "photo.png", None, "mislabelled"),
    (_ZIP_OF_TEXT, "report.pdf", None, "unsupported_archive"),
    (b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4, "logs.gz", None, "unsupported_archive"),
    (b"\x7fELF" + bytes(range(256)) * 4, "tool", None, "unsupported_program"),
    (b"OggS" + bytes(range(256)) * 4, "talk.ogg", None, "unsupported_media"),
    (b"SQLite format 3\x00" + bytes(range(256)) * 4, "app.db", None, "unsupported_database"),
    (b"{\\rtf1\\ansi Hello}", "letter.rtf", None, "unsupported_rtf"),
    (b"%!PS-Adobe-3.0\n", "print.ps", None, "unsupported_postscript"),
    (_odt(), "notes.odt", None, "unsupported_opendocument"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512), "old.doc", None, "unsupported_old_office"),
    (bytes(range(256)) * 8, "blob.bin", None, "unsupported_binary"),
    (bytes(range(256)) * 8, "report.pdf", None, "mislabelled"),
]


def _failed_job(exc: BaseException) -> JobRecord:
    """A job that failed with `exc`, as the job runner stores it."""
    return JobRecord(
        "j",
        "kb",
        "upload",
        "/uploads/x/file",
        "failed",
        "extract",
        0,
        0,
        str(exc),
        "",
        {},
        failure_data(exc),
        1,
        datetime(2026, 1, 1, tzinfo=UTC),
        None,
        datetime(2026, 1, 1, tzinfo=UTC),
    )


def _han(text: str) -> bool:
    return any("\u4e00" <= char <= "\u9fff" for char in text)


def _said_in_both(exc: BaseException) -> tuple[str, str]:
    job = _failed_job(exc)
    english, chinese = messages.failure(job, "en"), messages.failure(job, "zh")
    assert english != chinese
    assert not _han(english), english
    assert _han(chinese), chinese
    # A chat never sees a setting's name (INGEST_MAX_FILE_MB) or the library's own words ("Stream has ended").
    assert re.search(r"\b[A-Z]+(?:_[A-Z]+)+\b", english + chinese) is None
    return english, chinese


@pytest.mark.parametrize(("data", "name", "limits", "reason"), BAD_FILES, ids=[case[3] for case in BAD_FILES])
def test_a_file_ragbot_cannot_read_fails_with_a_reason_said_in_each_language(
    data: bytes, name: str, limits: ExtractLimits | None, reason: str
) -> None:
    with pytest.raises(ExtractionError) as caught:
        extract(data, filename=name, limits=limits or ExtractLimits())
    assert caught.value.reason == reason
    _said_in_both(caught.value)


def test_a_size_is_said_in_mb_and_the_operators_line_keeps_its_detail() -> None:
    with pytest.raises(ExtractionError) as caught:
        extract(b"x" * 3_000_000, filename="big.txt", limits=ExtractLimits(max_bytes=2_000_000))
    english, chinese = _said_in_both(caught.value)
    assert "3 MB" in english
    assert "2 MB" in english
    assert "2 MB" in chinese
    assert str(caught.value).startswith("file is 3.0 MB, over the limit of 2.0 MB")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://example.org/file.pdf", "bad_scheme"),
        ("example.org/file.pdf", "bad_url"),
        ("http://127.0.0.1:9/", "address_refused"),
        ("http://10.1.2.3/wiki", "address_refused"),
    ],
)
async def test_a_web_address_ragbot_may_not_fetch_fails_with_a_reason_said_in_each_language(
    url: str, reason: str
) -> None:
    with pytest.raises(ExtractionError) as caught:
        await fetch_url(url)
    assert caught.value.reason == reason
    _said_in_both(caught.value)


@pytest.mark.parametrize(
    ("sheet", "name", "english", "chinese"),
    [
        (
            b"question,answer\nWhere?,Here.\nWhen?,\n",
            "faq.csv",
            "row 3: there is no answer: fill in the answer column",
            "第 3 行：没有答案：请填写答案列",
        ),
        (
            b"question,reply\nWhere?,Here.\n",
            "faq.csv",
            "row 1: the required column(s) answer are missing (row 1 has 'question', 'reply')",
            "第 1 行：缺少必需的列 answer（第 1 行是 'question', 'reply'）",
        ),
        (b'[{"question": "Where?"}]', "faq.json", "row 1: there is no answer", "第 1 行：没有答案"),
        (
            b"",
            "faq.xls",
            "an FAQ sheet must be .csv, .xlsx or .json, not .xls",
            "问答表格必须是 .csv、.xlsx 或 .json，不能是 .xls",
        ),
        (b"not json", "faq.json", "the JSON is invalid at line 1, column 1", "JSON 在第 1 行第 1 列有错误"),
    ],
)
def test_an_faq_sheets_problems_are_said_row_by_row_in_each_language(
    sheet: bytes, name: str, english: str, chinese: str
) -> None:
    with pytest.raises(FaqImportError) as caught:
        parse_faq_file(sheet, name)
    said_in_english, said_in_chinese = _said_in_both(caught.value)
    assert said_in_english.startswith(english), said_in_english
    assert said_in_chinese.startswith(chinese), said_in_chinese


def test_more_problems_than_are_kept_are_counted() -> None:
    rows = "".join(f"Question {n}?,\n" for n in range(8))
    with pytest.raises(FaqImportError) as caught:
        parse_faq_file(f"question,answer\n{rows}".encode(), "faq.csv")
    english, chinese = _said_in_both(caught.value)
    assert english.endswith("(and 3 more)")
    assert chinese.endswith("（另有 3 处）")


@pytest.mark.parametrize(
    ("exc", "reason"),
    [(ConnectionError("socket closed"), "internal"), (RuntimeError("bug"), "internal")],
)
def test_a_failure_without_an_id_is_said_without_its_internals(exc: BaseException, reason: str) -> None:
    assert failure_data(exc) == {"failure": {"reason": reason}}
    english, _ = _said_in_both(exc)
    assert "socket" not in english


def test_a_job_failed_by_an_older_ragbot_shows_its_stored_line() -> None:
    job = _failed_job(ValueError("x"))
    old = JobRecord(**{**{field: getattr(job, field) for field in JobRecord.__slots__}, "result": {}, "error": "bad"})
    assert messages.failure(old, "zh") == "bad"


def _reason_ids(folder: str, pattern: str) -> set[str]:
    return {
        found
        for path in (ROOT / folder).rglob("*.py")
        for found in re.findall(pattern, path.read_text(encoding="utf-8"))
    }


def test_every_reason_id_written_in_rag_is_worded_in_the_catalogue() -> None:
    english = i18n.catalogue("en").entries
    extraction = _reason_ids("rag", r'reason="([a-z0-9_]+)"') | _reason_ids("bot/knowledge", r'reason="([a-z0-9_]+)"')
    extraction |= _reason_ids("rag/ingest", r'\("((?:no_text|unsupported|blank)[a-z0-9_]*)",')
    faq = set(
        re.findall(
            r'(?:_failed\(\s*[^,]+,\s*|problem\(\s*|FaqProblem\([^,]+,[^,]+,\s*)"([a-z0-9_]+)"',
            (ROOT / "rag/ingest/faq_sheet.py").read_text(encoding="utf-8"),
        )
    )
    faq |= {f"{what}_too_long" for what in ("question", "similar", "negative", "answer")}
    assert {"no_text_pdf", "unsupported_image", "too_large", "url_status"} <= extraction
    assert {"no_answer", "missing_columns", "extra_cells"} <= faq
    assert sorted(reason for reason in extraction if f"failure.{reason}" not in english) == []
    assert sorted(reason for reason in faq if f"failure.faq.{reason}" not in english) == []
