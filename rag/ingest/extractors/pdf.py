"""PDF text, one section per page, with pypdf; lines set in a larger type than the body marked as headings."""

from __future__ import annotations

import io
import logging
import math
import struct
import zlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pypdf import PageObject, PasswordType, PdfReader
from pypdf.errors import DependencyError, PyPdfError

from rag.errors import CorruptDocument, DocumentTooLarge, EncryptedDocument
from rag.ingest.extractors.damage import reason
from rag.ingest.types import ExtractedDocument, Section

logger = logging.getLogger(__name__)

# A line whose type is at least this much larger than the body text's is a heading: ReportLab's Heading2 is 14 pt
# over a 10 pt body, Word's Heading 2 13 pt over 11 pt. Longer lines in large type are a large-print paragraph.
_HEADING_SCALE = 1.15
_HEADING_MAX_CHARS = 120

_Runs = list[tuple[float, str]]  # (type size in points, text) of each text run of a page

# pypdf reports most damage as PyPdfError, but malformed objects also surface as these built-in errors
# from inside its parser (bad dictionary keys, short streams, broken deflate data, cyclic references).
_PDF_ERRORS = (
    PyPdfError,
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    AttributeError,
    RecursionError,
    struct.error,
    zlib.error,
)


def extract_pdf(data: bytes, *, max_pages: int, mime_type: str) -> ExtractedDocument:
    """One section per page that has text, with {'page': n} counted from 1; the title from the metadata."""
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            _open_with_empty_password(reader)
        page_count = len(reader.pages)
    except _PDF_ERRORS as exc:
        raise CorruptDocument(
            f"PDF is damaged ({reason(exc)}): export or print it to PDF again", reason="damaged_pdf"
        ) from exc
    if page_count > max_pages:
        raise DocumentTooLarge(
            f"PDF has {page_count} pages, over the limit of {max_pages}: split it into smaller files",
            reason="too_many_pages",
            pages=page_count,
            max_pages=max_pages,
        )
    pages: list[tuple[int, str, _Runs]] = []
    failed: list[int] = []
    for number in range(1, page_count + 1):
        try:
            text, runs = _page_text(reader.pages[number - 1])
        except _PDF_ERRORS as exc:
            logger.warning("pdf_page_unreadable page=%d error=%s", number, exc)
            failed.append(number)
            continue
        if text.strip():
            pages.append((number, text, runs))
    headings = _heading_levels([run for _, _, runs in pages for run in runs])
    sections = [Section(_mark_headings(text, headings), {"page": number}) for number, text, _ in pages]
    if failed and len(failed) == page_count:
        raise CorruptDocument(
            "PDF is damaged: no page could be read; export or print it to PDF again", reason="damaged_pdf"
        )
    return ExtractedDocument(
        sections=tuple(sections),
        mime_type=mime_type,
        title=_title(reader),
        metadata={"pages": page_count, "unreadable_pages": failed} if failed else {"pages": page_count},
    )


def _page_text(page: PageObject) -> tuple[str, _Runs]:
    """The page's text and the type size of each of its text runs."""
    runs: _Runs = []

    def visit(text: str, cm: Sequence[float], tm: Sequence[float], font: Any, size: float) -> None:
        if text.strip():
            # The size set with Tf is scaled by the text and transformation matrices (Word sets Tf 1 and scales).
            scale = math.hypot(tm[2], tm[3]) * math.hypot(cm[2], cm[3])
            runs.append((round(size * scale, 1), " ".join(text.split())))

    return page.extract_text(visitor_text=visit), runs


def _heading_levels(runs: _Runs) -> dict[str, int]:
    """Heading text -> level (1 for the largest type): the short runs set larger than the document's body text,
    which is the type size most characters are set in."""
    weights: Counter[float] = Counter()
    for size, text in runs:
        weights[size] += len(text)
    if not weights:
        return {}
    body = weights.most_common(1)[0][0]
    larger = sorted({size for size, _ in runs if size >= body * _HEADING_SCALE}, reverse=True)
    level = {size: min(rank, 6) for rank, size in enumerate(larger, 1)}
    found: dict[str, int] = {}
    for size, text in runs:
        if size in level and len(text) <= _HEADING_MAX_CHARS:
            found.setdefault(text, level[size])
    return found


def _mark_headings(text: str, headings: dict[str, int]) -> str:
    """The page text with each line that is a heading run written as a Markdown heading ('## Devices')."""
    if not headings:
        return text
    lines = []
    for line in text.split("\n"):
        key = " ".join(line.split())
        lines.append("#" * headings[key] + " " + key if key in headings else line)
    return "\n".join(lines)


def _open_with_empty_password(reader: PdfReader) -> None:
    """Many PDFs are encrypted only against editing, with an empty password for reading; open those."""
    try:
        opened = reader.decrypt("")
    except (NotImplementedError, DependencyError) as exc:
        raise EncryptedDocument(
            f"PDF is encrypted in a way ragbot cannot open ({reason(exc)}): remove the protection and upload it again",
            reason="encrypted_unsupported",
        ) from exc
    if opened == PasswordType.NOT_DECRYPTED:
        raise EncryptedDocument(
            "PDF is password-protected: remove the password and upload it again", reason="encrypted"
        )


def _title(reader: PdfReader) -> str:
    try:
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
    except _PDF_ERRORS as exc:
        logger.warning("pdf_metadata_unreadable error=%s", exc)
        return ""
    return " ".join(str(title).split()) if title else ""
