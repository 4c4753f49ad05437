"""Which way up a page is and which script it is written in, from Tesseract's orientation and script detection.

Reading a Chinese page with eng+chi_sim mistakes whole lines for garbled Latin, and an upside-down scan gives
nothing at all: so each page is first looked at with `--psm 0 -l osd` (about half a second on an A4 page),
turned upright, and a Han page read with the Han languages alone (bench/RESULTS.md, "Issue 24: OCR").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.ingest.extractors.limits import OcrLimits
from rag.ingest.extractors.tesseract import run_tesseract_unchecked

# Tesseract's language packs written in Han characters. chi_sim reads the Latin words of a Chinese page well
# (0.98-0.99 of the characters of English pages in the bench), so a Han page needs no Latin pack beside it.
_HAN = frozenset({"chi_sim", "chi_tra", "chi_sim_vert", "chi_tra_vert", "jpn", "jpn_vert", "kor", "kor_vert"})
# Legible pages score 16-19 in the bench; below this the guess is no better than leaving the page as it is.
_MIN_ORIENTATION_CONFIDENCE = 2.0
_FIELD = re.compile(r"^(Rotate|Orientation confidence|Script): (.+)$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Layout:
    """How to read a page: degrees to turn it clockwise, and its script ('Latin', 'Han'; '' when not known)."""

    rotate: int = 0
    script: str = ""


def page_layout(picture: bytes, limits: OcrLimits, seconds: float) -> Layout:
    """The page's layout, or the default one when Tesseract cannot tell (too few letters, no osd pack)."""
    done = run_tesseract_unchecked(["--psm", "0", "-l", "osd"], picture, limits, seconds)
    return parse_osd(done.stdout.decode("utf-8", errors="replace")) if done.returncode == 0 else Layout()


def parse_osd(report: str) -> Layout:
    """The layout a `--psm 0` report gives; rotation only when Tesseract is confident of it."""
    fields = dict(_FIELD.findall(report))
    try:
        rotate = int(fields.get("Rotate", "0"))
        confident = float(fields.get("Orientation confidence", "0")) >= _MIN_ORIENTATION_CONFIDENCE
    except ValueError:
        return Layout()
    return Layout(rotate if confident and rotate in (90, 180, 270) else 0, fields.get("Script", "").strip())


def languages_for(script: str, configured: str) -> str:
    """The configured languages (`eng+chi_sim`) to read a page of `script` with: a Han page with the Han ones alone,
    any other page with all of them (a Latin page may hold Chinese lines, which eng alone would lose)."""
    languages = configured.split("+")
    chosen = [language for language in languages if language in _HAN] if script == "Han" else languages
    return "+".join(chosen or languages)
