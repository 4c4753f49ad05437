"""Turn an uploaded or fetched file into text: detect its type, enforce size limits, run its extractor.

Extraction is CPU-bound and synchronous; async callers run it with `asyncio.to_thread`.
"""

from __future__ import annotations

import dataclasses
import re

from rag.errors import ExtractionError, NoTextFound
from rag.ingest.extractors import detect as mime
from rag.ingest.extractors.detect import Detection, detect
from rag.ingest.extractors.limits import ExtractLimits, check_file_size, check_zip_container
from rag.ingest.types import ExtractedDocument, Section

__all__ = ["DEFAULT_LIMITS", "ExtractLimits", "detect_type", "extract"]

DEFAULT_LIMITS = ExtractLimits()

# Titles that programs write when the author gave none: ReportLab's "untitled", Office's "Document1" and
# "Presentation1", Word's PDF printer's "Microsoft Word - <file>". The file's own name says more than these.
_PLACEHOLDER_TITLE = re.compile(
    r"\s*(?:untitled(?: document)?|no title|title|document|presentation|powerpoint presentation|book|workbook"
    r"|microsoft (?:word|excel|powerpoint) - .*)[\s_-]*\d*\s*",
    re.IGNORECASE,
)

# Why a file of each type came out empty (the reason id a chat words, and the operator's English).
_NO_TEXT = {
    mime.PDF: ("no_text_pdf", "no text found in the PDF, not even by OCR in its images: check that it is legible"),
    mime.DOCX: (
        "no_text_docx",
        "no text found in the Word document (images only?): add the text or run OCR on the images",
    ),
    mime.PPTX: ("no_text_pptx", "no text found in the slides (images only?): add text or speaker notes to them"),
    mime.XLSX: ("no_text_xlsx", "no data found in the Excel file: check that its sheets are not empty"),
    mime.EPUB: ("no_text_epub", "no text found in the EPUB (images only?): upload a text edition"),
    mime.EML: ("no_text_eml", "no text found in the e-mail: check that the file is the whole message"),
    mime.HTML: (
        "no_text_html",
        "no readable text found in the HTML page (built by JavaScript?): upload the content as a file",
    ),
    mime.CSV: ("no_text_csv", "no data found in the CSV file: check that it has rows"),
    mime.JSON: ("no_text_json", "the JSON file holds no values: check that it is the right file"),
    mime.MARKDOWN: ("blank", "the Markdown file holds only whitespace: upload a file with content"),
    mime.TEXT: ("blank", "the text file holds only whitespace: upload a file with content"),
    **dict.fromkeys(
        mime.IMAGES, ("no_text_image", "no text found in the image by OCR: upload a sharper scan, or the text itself")
    ),
}


def detect_type(data: bytes, filename: str | None = None, content_type: str | None = None) -> str:
    """The MIME type ragbot will read `data` as: content first, then the file name, then `content_type`.

    Raises UnsupportedType (naming what the file is) for types ragbot cannot read, CorruptDocument for
    a damaged container and EncryptedDocument for a password-protected Office file.
    """
    return detect(data, filename, content_type).mime_type


def extract(
    data: bytes,
    *,
    filename: str | None = None,
    content_type: str | None = None,
    limits: ExtractLimits = DEFAULT_LIMITS,
) -> ExtractedDocument:
    """The text of a file as ordered sections; never an empty success (NoTextFound instead)."""
    if not data:
        raise ExtractionError("file is empty: upload it again with its content", reason="empty")
    check_file_size(data, limits)
    detection = detect(data, filename, content_type)
    if detection.mime_type in mime.ZIP_CONTAINERS:
        check_zip_container(data, limits)
    document = _extract(data, detection, limits)
    sections = tuple(Section(text, section.metadata) for section in document.sections if (text := _clean(section.text)))
    if not sections:
        reason, message = _NO_TEXT[detection.mime_type]
        raise NoTextFound(message, reason=reason)
    return dataclasses.replace(document, sections=sections, title=_real_title(document.title))


def _real_title(title: str) -> str:
    """The title the file gives, or "" when it gives none or only a program's placeholder."""
    return "" if _PLACEHOLDER_TITLE.fullmatch(title) else " ".join(title.split())


def _extract(data: bytes, detection: Detection, limits: ExtractLimits) -> ExtractedDocument:
    # Each reader is imported when a file of its type comes: together they cost ~0.35 s of start-up (pypdf,
    # python-docx, python-pptx, openpyxl, bs4) that a process answering questions never needs.
    mime_type, decoded = detection.mime_type, detection.decoded
    if mime_type == mime.PDF:
        from rag.ingest.extractors.pdf import extract_pdf

        return extract_pdf(data, max_pages=limits.max_pages, mime_type=mime_type, ocr=limits.ocr)
    if mime_type in mime.IMAGES:
        from rag.ingest.extractors.image import extract_image

        return extract_image(data, limits=limits.ocr, mime_type=mime_type)
    if mime_type == mime.DOCX:
        from rag.ingest.extractors.word import extract_docx

        return extract_docx(data, mime_type=mime_type)
    if mime_type == mime.PPTX:
        from rag.ingest.extractors.slides import extract_pptx

        return extract_pptx(data, max_pages=limits.max_pages, mime_type=mime_type)
    if mime_type == mime.XLSX:
        from rag.ingest.extractors.sheets import extract_xlsx

        return extract_xlsx(data, mime_type=mime_type)
    if mime_type == mime.EPUB:
        from rag.ingest.extractors.epub import extract_epub

        return extract_epub(data, mime_type=mime_type)
    if mime_type == mime.EML:
        from rag.ingest.extractors.mail import extract_eml

        return extract_eml(data, mime_type=mime_type)
    # Every other type is text, so detection has decoded it already.
    assert decoded is not None
    if mime_type == mime.HTML:
        from rag.ingest.extractors.html import decode_markup, extract_html

        return extract_html(decode_markup(data, decoded) or decoded.text, mime_type)
    from rag.ingest.extractors.text import extract_csv, extract_json, extract_plain

    if mime_type == mime.CSV:
        return extract_csv(decoded, mime_type)
    if mime_type == mime.JSON:
        return extract_json(decoded, mime_type)
    return extract_plain(decoded, mime_type)


def _clean(text: str) -> str:
    """Unix newlines, no NUL characters (PostgreSQL text cannot hold them), no surrounding blank space."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").strip()
