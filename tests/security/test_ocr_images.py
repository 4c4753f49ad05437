"""read_image_text, which reads photos sent with questions: in a memory-limited child, bounded, with clear refusals."""

from __future__ import annotations

import pytest
from PIL import Image

from rag.errors import CorruptDocument, DocumentTooLarge, OcrTimeout, UnsupportedType
from rag.ingest.ocr import OcrLimits, read_image_text
from tests.support.scans import encode, multipage_tiff, render

ENGLISH = "The printer on the third floor needs a new toner."
CHINESE = "三楼的打印机需要换新的墨粉。"
_MIB = 1024 * 1024


async def test_a_screenshot_is_read_in_english_and_chinese():
    text = await read_image_text(encode(render([ENGLISH, CHINESE]), "WEBP"), OcrLimits())

    assert ENGLISH in text
    assert CHINESE in text


async def test_a_40_megapixel_png_is_read_within_a_small_memory_limit():
    page = Image.new("RGB", (7300, 5500), "white")
    page.paste(render([ENGLISH], size=(3400, 400), font_size=120), (200, 200))

    text = await read_image_text(encode(page), OcrLimits(), memory_bytes=768 * _MIB)

    assert ENGLISH in text


async def test_the_pages_of_a_tiff_are_joined():
    text = await read_image_text(multipage_tiff([render([ENGLISH]), render([CHINESE])]), OcrLimits())
    assert text.index(ENGLISH) < text.index(CHINESE)


async def test_an_image_without_text_gives_no_text():
    assert await read_image_text(encode(Image.new("L", (640, 480), 200)), OcrLimits()) == ""


@pytest.mark.parametrize(
    ("data", "error", "reason"),
    [
        (ENGLISH.encode(), UnsupportedType, "not_image"),
        (b"%PDF-1.7\n" + bytes(200), UnsupportedType, "not_image"),
        (encode(render([ENGLISH]))[:2000], CorruptDocument, "damaged_image"),
        (b"\x89PNG\r\n\x1a\n" + bytes(64), CorruptDocument, "damaged_image"),
    ],
    ids=["text-named-png", "pdf", "truncated-png", "png-header-only"],
)
async def test_what_is_no_readable_image_is_refused_with_its_reason(data, error, reason):
    with pytest.raises(error) as caught:
        await read_image_text(data, OcrLimits())
    assert caught.value.reason == reason


async def test_an_image_over_the_decode_limit_is_refused_with_its_size():
    with pytest.raises(DocumentTooLarge, match="the image is 2 megapixels, over the 1 megapixels") as caught:
        await read_image_text(encode(render([ENGLISH], size=(2000, 1000))), OcrLimits(max_decode_pixels=1_000_000))
    assert caught.value.details == {"megapixels": 2, "max_megapixels": 1}


async def test_an_image_that_takes_too_long_is_given_up_with_the_time():
    with pytest.raises(OcrTimeout, match="took longer than") as caught:
        await read_image_text(encode(render([ENGLISH])), OcrLimits(page_seconds=0.001, total_seconds=0.001))
    assert caught.value.reason == "ocr_timeout"
