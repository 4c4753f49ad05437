"""Pages of text rendered to images with Pillow, as a scanner or a screenshot gives them: PNG, TIFF and scanned PDFs."""

from __future__ import annotations

import io
from collections.abc import Sequence

from PIL import Image, ImageDraw, ImageFont

# Debian's fonts-noto-cjk (scripts/install-tesseract.sh installs it): one face that sets Latin and Chinese.
CJK_FONT = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"


def render(lines: Sequence[str], *, size: tuple[int, int] = (1700, 600), font_size: int = 36) -> Image.Image:
    """Black lines of text on a white page, one under another (OSError when the font is missing: tests fail)."""
    font = ImageFont.truetype(CJK_FONT, font_size)
    page = Image.new("L", size, 255)
    draw = ImageDraw.Draw(page)
    for index, line in enumerate(lines):
        draw.text((font_size * 2, font_size * 2 + index * font_size * 2), line, font=font, fill=0)
    return page


def encode(image: Image.Image, kind: str = "PNG") -> bytes:
    """The image saved as `kind` (PNG, JPEG, WEBP, TIFF)."""
    buffer = io.BytesIO()
    image.save(buffer, kind)
    return buffer.getvalue()


def scanned_pdf(pages: Sequence[Image.Image], *, resolution: float = 200.0) -> bytes:
    """A PDF whose pages are images only, as a scanner makes it: no text layer."""
    buffer = io.BytesIO()
    first, *rest = [page.convert("RGB") for page in pages]
    first.save(buffer, "PDF", save_all=True, append_images=rest, resolution=resolution)
    return buffer.getvalue()


def multipage_tiff(pages: Sequence[Image.Image]) -> bytes:
    """A multi-page TIFF, as a fax or a document scanner writes it."""
    buffer = io.BytesIO()
    first, *rest = pages
    first.save(buffer, "TIFF", save_all=True, append_images=rest)
    return buffer.getvalue()
