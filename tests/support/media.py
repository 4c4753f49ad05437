"""What the media tests send: a screenshot rendered from text, a voice note's bytes, the handbook they ask about."""

from __future__ import annotations

import io
from typing import Final

from PIL import Image, ImageDraw, ImageFont

HANDBOOK: Final = (
    b"# VPN\n\nThe VPN client is installed from the Software Center. It connects with your badge number.\n\n"
    b"# Lunch\n\nLunch is served from noon in the atrium on the second floor.\n"
)
# Not decodable audio: the fake transcription API answers by script, whatever the bytes.
OGG: Final = b"OggS\x00\x02" + bytes(200)
_FONT: Final = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def screenshot(text: str, *, size: tuple[int, int] = (1200, 160), font_size: int = 40) -> bytes:
    """A PNG of black text on white, as a screenshot of a dialog is (a larger `size` for a camera-sized photo)."""
    image = Image.new("L", size, "white")
    position = (30, size[1] // 2 - font_size // 2)
    ImageDraw.Draw(image).text(position, text, fill="black", font=ImageFont.truetype(_FONT, font_size))
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=1)
    return out.getvalue()
