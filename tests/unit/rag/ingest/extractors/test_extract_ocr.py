"""Images and scanned PDF pages read with the real Tesseract: text, pages, and clear refusals for bad images."""

from __future__ import annotations

import struct
import zlib

import pytest
from PIL import Image

from rag.errors import CorruptDocument, DocumentTooLarge, ExtractionError, NoTextFound, OcrTimeout, UnsupportedType
from rag.ingest.extract import ExtractLimits, extract
from rag.ingest.extractors.limits import OcrLimits
from rag.ingest.extractors.ocr import tidy
from tests.support.documents import make_pdf
from tests.support.scans import encode, multipage_tiff, render, scanned_pdf

ENGLISH = "Refunds are paid within five working days."
CHINESE = "退款会在五个工作日内退回原卡。"


def _header_only_png(width: int, height: int) -> bytes:
    """A PNG that declares `width` x `height` pixels but holds almost no data: what a decompression bomb starts as."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(64))) + chunk(b"IEND", b"")


@pytest.mark.parametrize("kind", ["PNG", "JPEG", "WEBP", "TIFF"])
def test_an_image_is_read_in_english_and_chinese(kind):
    document = extract(encode(render([ENGLISH, CHINESE]), kind), filename=f"notice.{kind.lower()}")

    assert document.mime_type == f"image/{kind.lower()}"
    assert ENGLISH in document.text
    assert CHINESE in document.text
    assert document.metadata == {"pages": 1, "ocr_pages": 1}


def test_an_image_whose_name_lies_is_read_by_its_content():
    assert ENGLISH in extract(encode(render([ENGLISH])), filename="notice.pdf").text


def test_a_text_file_named_like_an_image_is_read_as_the_text_it_is():
    assert extract(ENGLISH.encode(), filename="notice.png").text == ENGLISH


def test_a_file_named_like_an_image_that_is_no_image_is_refused_as_mislabelled():
    with pytest.raises(CorruptDocument, match=r"photo\.png is not a readable PNG image"):
        extract(bytes(range(256)) * 8, filename="photo.png")


def test_a_40_megapixel_photo_is_scaled_down_and_read():
    page = Image.new("L", (7300, 5500), 255)
    page.paste(render([ENGLISH], size=(3000, 400), font_size=120), (200, 200))

    document = extract(encode(page, "JPEG"), filename="photo.jpg")

    assert ENGLISH in document.text


def test_an_image_past_the_decode_limit_is_refused_before_it_is_decoded():
    with pytest.raises(DocumentTooLarge, match="the image is 400 megapixels, over the 100 megapixels"):
        extract(_header_only_png(20_000, 20_000), filename="huge.png")


def test_an_image_past_the_limit_of_the_settings_is_refused_with_its_size():
    limits = ExtractLimits(ocr=OcrLimits(max_decode_pixels=1_000_000))
    with pytest.raises(DocumentTooLarge, match="the image is 2 megapixels, over the 1 megapixels") as caught:
        extract(encode(render([ENGLISH], size=(2000, 1000))), filename="big.png", limits=limits)
    assert caught.value.reason == "image_too_large"


def test_a_truncated_image_is_refused_as_damaged():
    whole = encode(render([ENGLISH]))
    with pytest.raises(CorruptDocument, match="the PNG image is damaged or incomplete") as caught:
        extract(whole[: len(whole) // 2], filename="cut.png")
    assert caught.value.reason == "damaged_image"


def test_an_image_without_text_says_so():
    with pytest.raises(NoTextFound, match="no text found in the image") as caught:
        extract(encode(Image.new("L", (800, 600), 255)), filename="blank.png")
    assert caught.value.reason == "no_text_image"


def test_each_page_of_a_multipage_tiff_is_a_section_with_its_number():
    tiff = multipage_tiff([render(["Opening hours are nine to five."]), render([CHINESE])])

    document = extract(tiff, filename="fax.tiff")

    assert [section.metadata for section in document.sections] == [{"page": 1}, {"page": 2}]
    assert "Opening hours are nine to five." in document.sections[0].text
    assert CHINESE in document.sections[1].text


def test_the_pages_of_a_scanned_pdf_are_read_with_their_numbers():
    pdf = scanned_pdf([render(["Opening hours are nine to five."]), render([ENGLISH])])

    document = extract(pdf, filename="scan.pdf")

    assert [section.metadata for section in document.sections] == [{"page": 1}, {"page": 2}]
    assert "Opening hours are nine to five." in document.sections[0].text
    assert ENGLISH in document.sections[1].text
    assert document.metadata == {"pages": 2, "ocr_pages": 2}


def test_pages_with_a_text_layer_are_not_read_again_by_ocr():
    document = extract(make_pdf(["Opening hours are nine to five."]), filename="typed.pdf")
    assert document.metadata == {"pages": 1}


def test_a_300_page_scan_reads_up_to_the_page_limit_and_counts_the_rest():
    pdf = scanned_pdf([render([f"Page {number} of the manual"], size=(500, 120)) for number in range(1, 301)])

    document = extract(pdf, filename="manual.pdf", limits=ExtractLimits(ocr=OcrLimits(max_pages=5)))

    assert [section.metadata["page"] for section in document.sections] == [1, 2, 3, 4, 5]
    assert "Page 3 of the manual" in document.sections[2].text
    assert document.metadata["ocr_pages"] == 5
    assert document.metadata["ocr_unread_pages"] == list(range(6, 301))


def test_a_300_page_scan_stops_at_its_time_budget_with_the_pages_it_read():
    pdf = scanned_pdf([render([f"Page {number} of the manual"], size=(500, 120)) for number in range(1, 301)])
    limits = ExtractLimits(ocr=OcrLimits(max_pages=1000, total_seconds=3.0))

    document = extract(pdf, filename="manual.pdf", limits=limits)

    read, unread = document.metadata["ocr_pages"], document.metadata["ocr_unread_pages"]
    assert read >= 1
    assert unread
    assert read + len(unread) == 300
    assert "Page 1 of the manual" in document.sections[0].text


def test_an_image_too_slow_to_read_is_refused_with_the_time():
    limits = ExtractLimits(ocr=OcrLimits(page_seconds=0.001, total_seconds=0.001))
    with pytest.raises(OcrTimeout, match="took longer than"):
        extract(encode(render([ENGLISH])), filename="slow.png", limits=limits)


def test_a_missing_tesseract_is_named():
    limits = ExtractLimits(ocr=OcrLimits(command="/nonexistent/tesseract"))
    with pytest.raises(ExtractionError, match="Tesseract is not installed") as caught:
        extract(encode(render([ENGLISH])), filename="notice.png", limits=limits)
    assert caught.value.reason == "ocr_missing"


def test_a_language_without_its_pack_is_a_clear_failure():
    limits = ExtractLimits(ocr=OcrLimits(languages="klingon"))
    with pytest.raises(ExtractionError, match="Tesseract failed") as caught:
        extract(encode(render([ENGLISH])), filename="notice.png", limits=limits)
    assert caught.value.reason == "ocr_failed"


def test_a_gif_is_refused_with_what_to_do():
    with pytest.raises(UnsupportedType, match="save it as PNG or JPEG"):
        extract(b"GIF89a" + bytes(64), filename="anim.gif")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("退 款 会 在 五 个 工 作 日\n", "退款会在五个工作日"),
        ("Refunds 退 款 are paid\f", "Refunds 退款 are paid"),
        ("one\n\n\n\ntwo", "one\n\ntwo"),
    ],
)
def test_tesseract_output_is_tidied(raw, expected):
    assert tidy(raw) == expected
