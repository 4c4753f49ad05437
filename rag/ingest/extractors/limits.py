"""Size limits for extraction and the checks that enforce them before a file is parsed."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

from rag.errors import CorruptDocument, DocumentTooLarge

# Decimal units, as settings such as INGEST_MAX_FILE_MB count them, so messages quote the configured number.
_KB = 1000
_MB = 1000 * _KB
# Below this a container cannot hurt, however well it compresses (a page of spaces packs 1000:1).
_RATIO_FLOOR = 10 * _MB


@dataclass(frozen=True, slots=True)
class ExtractLimits:
    """Bounds that keep a huge or hostile file from exhausting memory or time."""

    max_bytes: int = 50 * _MB
    max_unpacked_bytes: int = 200 * _MB
    # Office XML compresses about 5-20:1; 100:1 leaves room for repetitive sheets and still stops zip bombs.
    max_compression_ratio: float = 100.0
    max_pages: int = 2000


def format_size(size: int) -> str:
    """A byte count as a person reads it: '512 bytes', '12.5 KB', '3.4 MB' (decimal units)."""
    if size < _KB:
        return f"{size} bytes"
    if size < _MB:
        return f"{size / _KB:.1f} KB"
    return f"{size / _MB:.1f} MB"


def check_file_size(data: bytes, limits: ExtractLimits) -> None:
    """Refuse a file over `max_bytes`."""
    if len(data) > limits.max_bytes:
        raise DocumentTooLarge(
            f"file is {format_size(len(data))}, over the limit of {format_size(limits.max_bytes)}: "
            "split it into smaller files"
        )


def check_zip_container(data: bytes, limits: ExtractLimits) -> None:
    """Refuse a ZIP container (docx, pptx, xlsx, epub) that would unpack too large or too compressed.

    The sizes come from the central directory without decompressing anything. They can be trusted
    as upper bounds: `zipfile` stops reading an entry at its declared size (and fails the CRC check),
    so an entry that lies about its size cannot unpack to more than it declares.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise CorruptDocument(f"the ZIP container is damaged ({exc}): export or save the file again") from exc
    unpacked = sum(info.file_size for info in infos)
    if unpacked > limits.max_unpacked_bytes:
        raise DocumentTooLarge(
            f"file would unpack to {format_size(unpacked)}, over the limit of "
            f"{format_size(limits.max_unpacked_bytes)}: split it into smaller files"
        )
    compressed = max(sum(info.compress_size for info in infos), 1)
    ratio = unpacked / compressed
    if unpacked > _RATIO_FLOOR and ratio > limits.max_compression_ratio:
        raise DocumentTooLarge(
            f"file is compressed {ratio:.0f}:1, over the limit of {limits.max_compression_ratio:.0f}:1 "
            "(a zip bomb?): save it again from the application that made it"
        )
