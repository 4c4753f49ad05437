"""Limits: empty and oversized files, and ZIP containers that unpack too large (zip bombs), honest or lying."""

from __future__ import annotations

import contextlib
import io
import struct
import tracemalloc
import zipfile
import zlib
from collections.abc import Callable

import pytest

from rag.errors import CorruptDocument, DocumentTooLarge, EncryptedDocument, ExtractionError
from rag.ingest.extract import ExtractLimits, extract
from rag.ingest.types import ExtractedDocument
from tests.support.documents import make_docx, make_epub, make_pptx, make_xlsx, make_zip_bomb


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """A .docx-shaped ZIP whose word/document.xml is 300 MB of zeros, about 1.4 MB packed."""
    return make_zip_bomb(unpacked_mb=300)


def test_an_empty_file_is_refused():
    with pytest.raises(ExtractionError, match="file is empty"):
        extract(b"", filename="empty.txt")


def test_a_file_over_the_size_limit_is_refused_naming_the_limit():
    with pytest.raises(DocumentTooLarge, match=r"file is 2\.0 KB, over the limit of 999 bytes"):
        extract(b"x" * 2000, filename="big.txt", limits=ExtractLimits(max_bytes=999))


def test_a_file_at_the_size_limit_is_read():
    assert extract(b"x" * 999, filename="big.txt", limits=ExtractLimits(max_bytes=999)).text == "x" * 999


def test_a_zip_bomb_is_refused_by_its_unpacked_size_before_it_is_read(bomb):
    with pytest.raises(DocumentTooLarge, match=r"would unpack to 300\.0 MB, over the limit of 200\.0 MB"):
        extract(bomb, filename="invoice.docx")


def test_a_zip_bomb_under_the_size_limit_is_refused_by_its_compression_ratio():
    with pytest.raises(DocumentTooLarge, match=r"compressed \d+:1, over the limit of 100:1 \(a zip bomb\?\)"):
        extract(make_zip_bomb(unpacked_mb=20), filename="invoice.docx")


def test_a_small_container_may_compress_well():
    # Under 10 MB unpacked the ratio cannot hurt, so the file gets parsed (and its zeros are no Word XML).
    with pytest.raises(CorruptDocument, match="Word document is damaged"):
        extract(make_zip_bomb(unpacked_mb=5), filename="zeros.docx")


def test_the_unpacked_limit_is_configurable():
    with pytest.raises(DocumentTooLarge, match=r"would unpack to [\d.]+ KB, over the limit of 16\.0 KB"):
        extract(make_docx(), filename="a.docx", limits=ExtractLimits(max_unpacked_bytes=16_000))


def _headers(data: bytes, part: str) -> tuple[int, int]:
    """Offsets of `part`'s central directory record and of its local header."""
    end = data.rfind(b"PK\x05\x06")
    (count,) = struct.unpack_from("<H", data, end + 10)
    (offset,) = struct.unpack_from("<I", data, end + 16)
    for _ in range(count):
        name_length, extra_length, comment_length = struct.unpack_from("<HHH", data, offset + 28)
        if data[offset + 46 : offset + 46 + name_length] == part.encode():
            return offset, struct.unpack_from("<I", data, offset + 42)[0]
        offset += 46 + name_length + extra_length + comment_length
    raise KeyError(part)


def _understated(container: bytes, part: str, *, padding_mb: int) -> bytes:
    """`container` with `part` followed in its deflate stream by `padding_mb` MB of spaces its headers do not declare.

    Both headers declare the original part's size and CRC, so `zipfile` on its own accepts the file: it
    inflates the whole stream, cuts it to the declared size and finds the CRC right.
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(container)) as source, zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            content = source.read(info)
            if info.filename != part:
                target.writestr(info, content, compress_type=info.compress_type)
                continue
            with target.open(part, "w") as entry:
                entry.write(content)
                for _ in range(padding_mb):
                    entry.write(b" " * 1_000_000)
            declared, crc = len(content), zlib.crc32(content)
    data = bytearray(buffer.getvalue())
    central, local = _headers(data, part)
    struct.pack_into("<I", data, central + 16, crc)
    struct.pack_into("<I", data, central + 24, declared)
    struct.pack_into("<I", data, local + 14, crc)
    struct.pack_into("<I", data, local + 22, declared)
    return bytes(data)


def _encrypted(container: bytes, part: str) -> bytes:
    """`container` with `part` flagged as encrypted (general-purpose bit 0) in both its headers."""
    data = bytearray(container)
    central, local = _headers(data, part)
    for flags_at in (central + 8, local + 6):
        struct.pack_into("<H", data, flags_at, struct.unpack_from("<H", data, flags_at)[0] | 0x1)
    return bytes(data)


def _peak_while(action: Callable[[], object]) -> int:
    """The most memory Python held (bytes, traced) while `action` ran."""
    tracemalloc.start()
    try:
        with contextlib.suppress(ExtractionError):
            action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _extract_bounded(data: bytes, filename: str) -> ExtractedDocument:
    return extract(data, filename=filename, limits=ExtractLimits(max_unpacked_bytes=1_000_000))


_MAIN_PARTS = [
    ("hostile.docx", make_docx, "word/document.xml"),
    ("hostile.pptx", make_pptx, "ppt/presentation.xml"),
    ("hostile.xlsx", lambda: make_xlsx({"Prices": [["item", "price"], ["tea", 3]]}), "xl/workbook.xml"),
    ("hostile.epub", lambda: make_epub([("Leave", "25 days a year.")]), "OEBPS/content.opf"),
]


@pytest.mark.parametrize(("filename", "build", "part"), _MAIN_PARTS)
def test_a_container_whose_headers_understate_a_part_is_refused_without_inflating_it(
    filename: str, build: Callable[[], bytes], part: str
) -> None:
    hostile = _understated(build(), part, padding_mb=30)
    assert len(hostile) < 200_000

    with pytest.raises(DocumentTooLarge, match=r"unpacks to more than the limit of 1\.0 MB, although its ZIP headers"):
        _extract_bounded(hostile, filename)
    # Inflating the 30 MB (as python-docx, python-pptx and openpyxl would through zipfile.read) peaks above 30 MB.
    assert _peak_while(lambda: _extract_bounded(hostile, filename)) < 5_000_000


def test_an_understated_part_is_refused_by_the_compression_ratio_under_the_default_limits() -> None:
    hostile = _understated(make_docx(), "word/document.xml", padding_mb=30)

    with pytest.raises(DocumentTooLarge, match=r"compressed more than 100:1, although its ZIP headers declare"):
        extract(hostile, filename="invoice.docx")
    assert _peak_while(lambda: extract(hostile, filename="invoice.docx")) < 5_000_000


def test_a_part_that_unpacks_past_its_declared_size_within_the_limits_is_refused_as_tampered() -> None:
    hostile = _understated(make_docx(), "word/document.xml", padding_mb=1)

    with pytest.raises(
        CorruptDocument, match=r"word/document\.xml inside the file unpacks to more than its ZIP header says"
    ):
        extract(hostile, filename="invoice.docx")


def test_detection_reads_an_understated_epub_mimetype_entry_in_bounded_steps() -> None:
    hostile = _understated(make_epub([("Leave", "25 days a year.")]), "mimetype", padding_mb=30)

    with pytest.raises(DocumentTooLarge, match="although its ZIP headers declare"):
        _extract_bounded(hostile, "book.epub")
    assert _peak_while(lambda: _extract_bounded(hostile, "book.epub")) < 5_000_000


def test_a_part_compressed_with_a_method_office_never_uses_is_refused() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(make_docx())) as source, zipfile.ZipFile(buffer, "w") as target:
        for info in source.infolist():
            method = zipfile.ZIP_BZIP2 if info.filename == "word/document.xml" else zipfile.ZIP_DEFLATED
            target.writestr(info.filename, source.read(info), compress_type=method)

    with pytest.raises(CorruptDocument, match="uses ZIP compression method 12, which Office and EPUB files never use"):
        extract(buffer.getvalue(), filename="odd.docx")


def test_a_password_protected_zip_part_is_refused_as_encrypted() -> None:
    locked = _encrypted(make_docx(), "word/document.xml")

    with pytest.raises(EncryptedDocument, match=r"word/document\.xml inside the file is password-protected"):
        extract(locked, filename="locked.docx")


@pytest.mark.parametrize(("filename", "build", "part"), _MAIN_PARTS)
def test_an_honest_container_still_extracts_after_the_inflation_check(
    filename: str, build: Callable[[], bytes], part: str
) -> None:
    assert _extract_bounded(build(), filename).text
