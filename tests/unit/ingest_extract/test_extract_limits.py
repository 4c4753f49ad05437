"""Limits: empty and oversized files, and ZIP containers that would unpack too large (zip bombs)."""

from __future__ import annotations

import pytest

from rag.errors import CorruptDocument, DocumentTooLarge, ExtractionError
from rag.ingest.extract import ExtractLimits, extract
from tests.unit.ingest_extract import make_docx, make_zip_bomb


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
