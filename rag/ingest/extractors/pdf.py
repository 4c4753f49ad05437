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

from PIL import Image
from pypdf import PageObject, PasswordType, PdfReader
from pypdf.errors import DependencyError, PyPdfError

from rag.errors import CorruptDocument, DocumentTooLarge, EncryptedDocument
from rag.ingest.extractors.damage import reason
from rag.ingest.extractors.limits import OcrLimits
from rag.ingest.extractors.ocr import PageLoader, read_pages, too_large
from rag.ingest.types import ExtractedDocument, Section

logger = logging.getLogger(__name__)

# A line whose type is at least this much larger than the body text's is a heading: ReportLab's Heading2 is 14 pt
# over a 10 pt body, Word's Heading 2 13 pt over 11 pt. Longer lines in large type are a large-print paragraph.
_HEADING_SCALE = 1.15
_HEADING_MAX_CHARS = 120

# A page with less text than this but an image is a scan with, at most, a page number or a stamp set as text.
_MIN_TEXT_LAYER = 16

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


def extract_pdf(data: bytes, *, max_pages: int, mime_type: str, ocr: OcrLimits | None = None) -> ExtractedDocument:
    """One section per page that has text, with {'page': n} counted from 1; the title from the metadata.

    With `ocr`, a page without a text layer (a scan) is read from its image by OCR, within the OCR limits; the
    metadata counts the pages read so (`ocr_pages`) and those left unread (`ocr_unread_pages`).
    """
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
    scans: list[int] = []
    for number in range(1, page_count + 1):
        try:
            text, runs = _page_text(reader.pages[number - 1])
        except _PDF_ERRORS as exc:
            logger.warning("pdf_page_unreadable page=%d error=%s", number, exc)
            failed.append(number)
            continue
        if len(text.strip()) >= _MIN_TEXT_LAYER:
            pages.append((number, text, runs))
        elif ocr is not None and _has_image(reader.pages[number - 1]):
            scans.append(number)
        elif text.strip():
            pages.append((number, text, runs))
    headings = _heading_levels([run for _, _, runs in pages for run in runs])
    found = [(number, _mark_headings(text, headings)) for number, text, _ in pages]
    metadata: dict[str, Any] = {"pages": page_count}
    if scans and ocr is not None:
        read = read_pages(((number, _image_loader(reader.pages[number - 1], ocr)) for number in scans), ocr)
        found = sorted([*found, *read.texts])
        metadata["ocr_pages"] = read.read
        if read.unread:
            metadata["ocr_unread_pages"] = list(read.unread)
    if failed and len(failed) == page_count:
        raise CorruptDocument(
            "PDF is damaged: no page could be read; export or print it to PDF again", reason="damaged_pdf"
        )
    if failed:
        metadata["unreadable_pages"] = failed
    return ExtractedDocument(
        sections=tuple(Section(text, {"page": number}) for number, text in found),
        mime_type=mime_type,
        title=_title(reader),
        metadata=metadata,
    )


def _images(page: PageObject) -> list[tuple[str, int]]:
    """The page's own image objects by name, with their declared size in pixels (nothing decoded)."""
    try:
        resources = page.get("/Resources")
        xobjects = resources.get_object().get("/XObject") if resources is not None else None
        if xobjects is None:
            return []
        found = []
        for name, reference in xobjects.get_object().items():
            xobject = reference.get_object()
            if xobject.get("/Subtype") == "/Image":
                found.append((str(name), int(xobject.get("/Width", 0)) * int(xobject.get("/Height", 0))))
    except _PDF_ERRORS as exc:
        logger.warning("pdf_images_unreadable error=%s", exc)
        return []
    return found


def _has_image(page: PageObject) -> bool:
    return bool(_images(page))


def _image_loader(page: PageObject, ocr: OcrLimits) -> PageLoader:
    """Decodes the page's largest image (a scan is one image a page) when OCR comes to it, not before."""

    def load() -> Image.Image:
        name, pixels = max(_images(page), key=lambda found: found[1])
        if pixels > ocr.max_decode_pixels:
            raise too_large(pixels, ocr.max_decode_pixels)
        try:
            image = page.images[name].image
        except (*_PDF_ERRORS, OSError) as exc:
            raise CorruptDocument(f"a scanned page's image is damaged ({reason(exc)})", reason="damaged_pdf") from exc
        if image is None:
            raise CorruptDocument("a scanned page's image could not be decoded", reason="damaged_pdf")
        return image

    return load


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
