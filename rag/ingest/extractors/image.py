"""Image files (PNG, JPEG, WebP, TIFF) read with OCR: a section per page of a multi-page TIFF, or one for the image."""

from __future__ import annotations

from typing import Any

from rag.ingest.extractors.detect import image_type
from rag.ingest.extractors.limits import ExtractLimits, OcrLimits, check_file_size
from rag.ingest.extractors.ocr import frames, open_image, read_pages
from rag.ingest.types import ExtractedDocument, Section


def extract_image(data: bytes, *, limits: OcrLimits, mime_type: str) -> ExtractedDocument:
    """The text OCR reads in the image; pages carry {'page': n} when the file has more than one."""
    image = open_image(data, limits)
    count = getattr(image, "n_frames", 1)
    pages = read_pages(frames(image), limits)
    sections = tuple(Section(text, {"page": number} if count > 1 else {}) for number, text in pages.texts)
    metadata: dict[str, Any] = {"pages": count, "ocr_pages": pages.read}
    if pages.unread:
        metadata["ocr_unread_pages"] = list(pages.unread)
    return ExtractedDocument(sections=sections, mime_type=mime_type, metadata=metadata)


def read_image(
    data: bytes, *, filename: str | None = None, content_type: str | None = None, limits: ExtractLimits
) -> ExtractedDocument:
    """An extraction child's reader for images alone (a photo sent with a question): no text is no error here."""
    del filename, content_type  # the content decides; a photo's name says nothing about its text
    check_file_size(data, limits)
    mime_type = image_type(data) or ""
    return extract_image(data, limits=limits.ocr, mime_type=mime_type)
