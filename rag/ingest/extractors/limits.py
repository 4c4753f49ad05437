"""Size limits for extraction and the checks that enforce them before a file is parsed."""

from __future__ import annotations

import copy
import io
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any

from rag.errors import CorruptDocument, DocumentTooLarge, EncryptedDocument

# Decimal units, as settings such as INGEST_MAX_FILE_MB count them, so messages quote the configured number.
_KB = 1000
_MB = 1000 * _KB
# Below this a container cannot hurt, however well it compresses (a page of spaces packs 1000:1).
_RATIO_FLOOR = 10 * _MB
# Each bounded read inflates at most this much, so checking a member never holds more than this in memory.
_READ_SIZE = 64 * 1024
# Office and EPUB writers only store or deflate. zipfile inflates bzip2 and LZMA members without an output
# bound, so one read of a few KB could unpack to gigabytes: refuse those methods outright.
_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})
_ENCRYPTED = 0x1
_ZIP_ERRORS: tuple[type[Exception], ...] = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    ValueError,
    EOFError,
    NotImplementedError,
)


@dataclass(frozen=True, slots=True)
class OcrLimits:
    """How Tesseract is run and what reading the text of images may cost."""

    command: str = "tesseract"
    languages: str = "eng+chi_sim"
    # An A4 page scanned at 300 dpi is 8.7 MP and a phone photo 12 MP: both read at full size, larger ones are
    # scaled down to this first (Tesseract reads text 20 px high as well as 60 px high, and takes 3x as long).
    max_pixels: int = 12_000_000
    # Past this no image is decoded at all: a 100 MP RGB image needs 300 MB before it can be scaled down.
    max_decode_pixels: int = 100_000_000
    max_pages: int = 100
    page_seconds: float = 30.0
    # All the pages of one file together; what is left unread past it is counted, not waited for.
    total_seconds: float = 90.0


@dataclass(frozen=True, slots=True)
class ExtractLimits:
    """Bounds that keep a huge or hostile file from exhausting memory or time."""

    max_bytes: int = 50 * _MB
    max_unpacked_bytes: int = 200 * _MB
    # Office XML compresses about 5-20:1; 100:1 leaves room for repetitive sheets and still stops zip bombs.
    max_compression_ratio: float = 100.0
    max_pages: int = 2000
    ocr: OcrLimits = OcrLimits()


def limits_from_wire(fields: dict[str, Any]) -> ExtractLimits:
    """The limits `dataclasses.asdict` made into plain JSON, rebuilt (the extraction child's side of the pipe)."""
    return ExtractLimits(**{**fields, "ocr": OcrLimits(**fields.get("ocr", {}))})


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
            "split it into smaller files",
            reason="too_large",
            size=len(data),
            max_size=limits.max_bytes,
        )


def check_zip_container(data: bytes, limits: ExtractLimits) -> None:
    """Refuse a ZIP container (docx, pptx, xlsx, epub) that unpacks too large, too compressed, or not as declared.

    The declared sizes in the central directory refuse an honest large file without inflating anything.
    They cannot be trusted beyond that: `zipfile.read()` inflates an entry's whole deflate stream (up to
    1 GB per call) before it cuts it to the declared size. So every entry is then inflated once, in
    bounded reads, counting the bytes that really come out and stopping at the limit; a parser is only
    handed a container whose entries unpack to no more than they declare, within the limits.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            declared = sum(info.file_size for info in infos)
            _check_declared(declared, len(data), limits)
            budget = _budget(len(data), limits)
            unpacked = 0
            for info in infos:
                unpacked += _inflate(archive, info, budget - unpacked, declared, len(data), limits)
    except _ZIP_ERRORS as exc:
        raise CorruptDocument(
            f"the ZIP container is damaged ({exc}): export or save the file again", reason="damaged_zip"
        ) from exc


def _check_declared(declared: int, packed: int, limits: ExtractLimits) -> None:
    """Refuse what the central directory itself admits is too large or too compressed."""
    if declared > limits.max_unpacked_bytes:
        raise DocumentTooLarge(
            f"file would unpack to {format_size(declared)}, over the limit of "
            f"{format_size(limits.max_unpacked_bytes)}: split it into smaller files",
            reason="unpacks_too_large",
            max_size=limits.max_unpacked_bytes,
        )
    ratio = declared / max(packed, 1)
    if declared > _RATIO_FLOOR and ratio > limits.max_compression_ratio:
        raise DocumentTooLarge(
            f"file is compressed {ratio:.0f}:1, over the limit of {limits.max_compression_ratio:.0f}:1 "
            "(a zip bomb?): save it again from the application that made it",
            reason="compressed_too_much",
            ratio=round(limits.max_compression_ratio),
        )


def _budget(packed: int, limits: ExtractLimits) -> int:
    """The most bytes the whole container may really unpack to under both the size and the ratio limit."""
    by_ratio = max(_RATIO_FLOOR, int(packed * limits.max_compression_ratio))
    return min(limits.max_unpacked_bytes, by_ratio)


def _inflate(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int, declared: int, packed: int, limits: ExtractLimits
) -> int:
    """Inflate one entry in bounded reads and return its real size; refuse it past `budget` or its declared size."""
    if info.flag_bits & _ENCRYPTED:
        raise EncryptedDocument(
            f"{info.filename} inside the file is password-protected: remove the password", reason="encrypted"
        )
    if info.compress_type not in _METHODS:
        raise CorruptDocument(
            f"{info.filename} inside the file uses ZIP compression method {info.compress_type}, which Office "
            "and EPUB files never use: save it again from the application that made it",
            reason="damaged_zip",
        )
    # zipfile stops an entry at its declared size (and then checks the CRC); lift that cap past the budget
    # to see how far the stream really goes. The margin covers zipfile inflating 4 KB when asked for less.
    unbounded = copy.copy(info)
    unbounded.file_size = budget + 2 * _READ_SIZE
    size = 0
    try:
        with archive.open(unbounded) as entry:
            while chunk := entry.read(min(_READ_SIZE, budget + 1 - size)):
                size += len(chunk)
                if size > budget:
                    raise _too_large(declared, packed, limits)
    except _ZIP_ERRORS as exc:
        if size <= info.file_size:
            # Damage that is no size lie (a bad CRC, a broken stream) stops the parser at the same point;
            # it reports it in its own words.
            return size
        raise _understated(info, size) from exc
    if size > info.file_size:
        raise _understated(info, size)
    return size


def _understated(info: zipfile.ZipInfo, size: int) -> CorruptDocument:
    """The error for an entry that unpacks to more than its header declares, within the limits."""
    return CorruptDocument(
        f"{info.filename} inside the file unpacks to more than its ZIP header says ({format_size(size)}, not "
        f"{format_size(info.file_size)}; damaged or tampered with): save it again from the application that made it",
        reason="damaged_zip",
    )


def _too_large(declared: int, packed: int, limits: ExtractLimits) -> DocumentTooLarge:
    """The error for a container that really unpacks past the limits its headers claimed to meet."""
    lie = f", although its ZIP headers declare {format_size(declared)} (a zip bomb?)"
    if limits.max_unpacked_bytes <= max(_RATIO_FLOOR, packed * limits.max_compression_ratio):
        return DocumentTooLarge(
            f"file unpacks to more than the limit of {format_size(limits.max_unpacked_bytes)}{lie}: "
            "save it again from the application that made it",
            reason="unpacks_too_large",
            max_size=limits.max_unpacked_bytes,
        )
    return DocumentTooLarge(
        f"file is compressed more than {limits.max_compression_ratio:.0f}:1{lie}: "
        "save it again from the application that made it",
        reason="compressed_too_much",
        ratio=round(limits.max_compression_ratio),
    )
