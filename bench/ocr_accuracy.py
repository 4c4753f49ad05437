"""OCR accuracy and speed: shipped documents' text rendered to page images, read back by ingestion's OCR.

A sample of SciFact abstracts (English) and CMRC 2018 paragraphs (Chinese) from ../shared/eval is set in a
print face on A4 pages at 300 dpi ("clean"), and again as a scanner or a phone gives it ("scanned": 200 dpi,
turned 0.6 degrees, blurred, speckled, saved as JPEG at quality 60). Each page goes through the product's own
`rag.ingest.extract.extract` as an uploaded PNG or JPEG would, with the default OCR settings (eng+chi_sim).

Accuracy is 1 - CER: the character edit distance from the rendered text to the text read, over the rendered
text's length, after whitespace is evened out (English: runs of blank space count as one space; Chinese: blank
space dropped). Reported over all characters, over letters and digits alone (punctuation and symbols dropped on
both sides), and per page (median, p5); seconds are per page, wall clock, decoding included.

    .venv/bin/python -m bench.ocr_accuracy [--eval-dir DIR] [--documents N]
"""

from __future__ import annotations

import argparse
import io
import json
import random
import re
import statistics
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from bench.common import commit, machine, percentile
from rag.errors import NoTextFound
from rag.ingest.extract import ExtractLimits, extract
from rag.ingest.extractors.limits import OcrLimits

ROOT = Path(__file__).resolve().parent.parent
# Print faces from Debian's fonts-dejavu-core and fonts-noto-cjk (scripts/install-tesseract.sh installs the latter).
FONTS = {
    "en": "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
    "zh": "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc",
}
# A4 at 300 dpi, 2.5 cm margins, 11 pt type (46 px at 300 dpi) on 1.5 lines.
_PAGE = (2480, 3508)
_MARGIN = 295
_FONT_PX = 46
_LINE_PX = 69
_SEED = 20241121
_NOISE = np.random.default_rng(_SEED)


@dataclass(frozen=True, slots=True)
class Page:
    """One rendered page: its language, its text as set, and the image file an admin would upload."""

    language: str
    text: str
    image: bytes


@dataclass(frozen=True, slots=True)
class Reading:
    """What OCR made of one page: edit distance and reference length (all characters, and letters and digits
    alone), seconds."""

    distance: int
    length: int
    letter_distance: int
    letters: int
    seconds: float


def _sample(eval_dir: Path, language: str, count: int) -> list[str]:
    folder = {"en": "scifact", "zh": "cmrc2018"}[language]
    lines = (eval_dir / folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    chosen = random.Random(_SEED).sample(rows, count)
    return [f"{row['title']}\n{row['text']}" for row in chosen]


def _wrap(text: str, font: ImageFont.FreeTypeFont, width: int, language: str) -> list[str]:
    """Lines that fit `width`: English broken between words, Chinese between any two characters."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        units = paragraph.split() if language == "en" else list(paragraph.strip())
        joiner = " " if language == "en" else ""
        line = ""
        for unit in units:
            candidate = f"{line}{joiner}{unit}" if line else unit
            if font.getlength(candidate) <= width:
                line = candidate
            else:
                lines.append(line)
                line = unit
        if line:
            lines.append(line)
    return lines


def _render(text: str, language: str) -> list[tuple[str, Image.Image]]:
    """The text set on as many A4 pages as it needs: each page's text and image."""
    font = ImageFont.truetype(FONTS[language], _FONT_PX)
    lines = _wrap(text, font, _PAGE[0] - 2 * _MARGIN, language)
    per_page = (_PAGE[1] - 2 * _MARGIN) // _LINE_PX
    pages = []
    for start in range(0, len(lines), per_page):
        chunk = lines[start : start + per_page]
        image = Image.new("L", _PAGE, 255)
        draw = ImageDraw.Draw(image)
        for index, line in enumerate(chunk):
            draw.text((_MARGIN, _MARGIN + index * _LINE_PX), line, font=font, fill=0)
        pages.append(("\n".join(chunk), image))
    return pages


def _clean(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def _scanned(image: Image.Image) -> bytes:
    """The page as a cheap scan: 200 dpi, slightly turned, soft, speckled, JPEG-compressed."""
    width, height = image.size
    small = image.resize((width * 2 // 3, height * 2 // 3), Image.Resampling.BILINEAR)
    turned = small.rotate(0.6, resample=Image.Resampling.BILINEAR, expand=False, fillcolor=255)
    soft = turned.filter(ImageFilter.GaussianBlur(0.8))
    pixels = np.asarray(soft, dtype=np.float32) + _NOISE.normal(0.0, 12.0, (soft.height, soft.width))
    speckled = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    buffer = io.BytesIO()
    speckled.save(buffer, "JPEG", quality=60)
    return buffer.getvalue()


def _normal(text: str, language: str) -> str:
    return " ".join(text.split()) if language == "en" else re.sub(r"\s+", "", text)


def _letters(text: str) -> str:
    """Letters and digits alone: what search reads (Tesseract often sets Chinese brackets and quotes as ASCII)."""
    return "".join(char for char in text if unicodedata.category(char)[0] in "LN")


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions each cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, left in enumerate(a, 1):
        current = [i]
        for j, right in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (left != right)))
        previous = current
    return previous[-1]


def _read(page: Page, limits: ExtractLimits) -> Reading:
    started = time.perf_counter()
    try:
        text = extract(page.image, filename="page.png", limits=limits).text
    except NoTextFound:
        text = ""
    seconds = time.perf_counter() - started
    reference, found = _normal(page.text, page.language), _normal(text, page.language)
    letters, found_letters = _letters(reference), _letters(found)
    return Reading(
        edit_distance(reference, found),
        len(reference),
        edit_distance(letters, found_letters),
        len(letters),
        seconds,
    )


def _row(name: str, readings: Sequence[Reading]) -> str:
    per_page = [max(0.0, 1 - reading.distance / reading.length) for reading in readings]
    overall = 1 - sum(reading.distance for reading in readings) / sum(reading.length for reading in readings)
    letters = 1 - sum(reading.letter_distance for reading in readings) / sum(reading.letters for reading in readings)
    seconds = [reading.seconds for reading in readings]
    chars = sum(reading.length for reading in readings)
    return (
        f"| {name} | {len(readings)} | {chars:,} | {overall:.3f} | {letters:.3f} | {statistics.median(per_page):.3f} | "
        f"{percentile(per_page, 0.05):.3f} | {statistics.median(seconds):.2f} | {percentile(seconds, 0.95):.2f} |"
    )


def main() -> None:
    """Render, read and report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    parser.add_argument("--documents", type=int, default=10, help="documents per language")
    args = parser.parse_args()
    conditions: dict[str, Callable[[Image.Image], bytes]] = {"clean": _clean, "scanned": _scanned}
    runs = [
        ("en", "eng+chi_sim"),
        ("en", "eng"),
        ("zh", "eng+chi_sim"),
        ("zh", "chi_sim"),
    ]
    print(f"commit {commit()} · {machine()} · {args.documents} documents per language, Tesseract on 1 thread a page")
    print()
    print(
        "| language · condition · OCR_LANGUAGES | pages | characters | accuracy (all chars) | letters and digits "
        "| median page | "
        "p5 page | s/page median | s/page p95 |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rendered = {
        language: [
            page for text in _sample(args.eval_dir, language, args.documents) for page in _render(text, language)
        ]
        for language in ("en", "zh")
    }
    for condition, encode in conditions.items():
        for language, languages in runs:
            limits = ExtractLimits(ocr=OcrLimits(languages=languages))
            pages = [Page(language, text, encode(image)) for text, image in rendered[language]]
            readings = [_read(page, limits) for page in pages]
            print(_row(f"{language} · {condition} · {languages}", readings), flush=True)


if __name__ == "__main__":
    main()
