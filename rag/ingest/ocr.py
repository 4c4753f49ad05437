"""Reading the text of one image outside ingestion (a photo sent with a question), bounded and killable.

The image is decoded and read in an extraction child (rag.ingest.sandbox): its memory is limited, the event loop
only waits on a pipe, and the child is killed when the time is up.
"""

from __future__ import annotations

from rag.ingest.extractors.limits import ExtractLimits, OcrLimits
from rag.ingest.sandbox import ExtractionSandbox, SandboxLimits

__all__ = ["OcrLimits", "read_image_text"]

_MIB = 1024 * 1024
# Decoding and scaling an image of `max_decode_pixels` takes a few seconds on top of Tesseract's time.
_DECODE_SECONDS = 10.0
# The text of one image: a page of small print is about 10,000 characters.
_MAX_CHARS = 1_000_000


async def read_image_text(data: bytes, limits: OcrLimits, *, memory_bytes: int = 1024 * _MIB) -> str:
    """The text in an image (PNG, JPEG, WebP or TIFF; a multi-page TIFF's pages joined), "" when it shows none.

    Raises rag.errors.ExtractionError with a reason a chat can word: UnsupportedType `not_image` for anything
    that is no image, CorruptDocument `damaged_image` for a damaged or truncated one, DocumentTooLarge
    `image_too_large` past `limits.max_decode_pixels` (larger than `limits.max_pixels` is scaled down, not
    refused), `too_large` past 50 MB, OcrTimeout `ocr_timeout` or `extract_timeout` past the time,
    `extract_memory` past `memory_bytes`, `ocr_missing` when Tesseract is not installed.
    """
    sandbox = ExtractionSandbox(
        SandboxLimits(
            memory_bytes=memory_bytes, seconds=limits.total_seconds + _DECODE_SECONDS, max_chars=_MAX_CHARS, idle=0
        ),
        reader="rag.ingest.extractors.image:read_image",
    )
    try:
        document = await sandbox.extract(data, limits=ExtractLimits(ocr=limits))
    finally:
        await sandbox.close()
    return document.text
