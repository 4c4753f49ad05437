"""PDF text, one section per page, with pypdf."""

from __future__ import annotations

import io
import logging
import struct
import zlib

from pypdf import PasswordType, PdfReader
from pypdf.errors import DependencyError, PyPdfError

from rag.errors import CorruptDocument, DocumentTooLarge, EncryptedDocument
from rag.ingest.extractors.damage import reason
from rag.ingest.types import ExtractedDocument, Section

logger = logging.getLogger(__name__)

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
    sections: list[Section] = []
    failed: list[int] = []
    for number in range(1, page_count + 1):
        try:
            text = reader.pages[number - 1].extract_text()
        except _PDF_ERRORS as exc:
            logger.warning("pdf_page_unreadable page=%d error=%s", number, exc)
            failed.append(number)
            continue
        if text.strip():
            sections.append(Section(text, {"page": number}))
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
