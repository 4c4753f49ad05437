"""Text of images with Tesseract: each page scaled to a pixel budget, read by a `tesseract` process with a deadline.

Synchronous and meant for the extraction child (rag.ingest.extract_child), whose memory limit Tesseract inherits;
rag.ingest.ocr runs it there for callers outside ingestion.
"""

from __future__ import annotations

import io
import logging
import math
import os
import re
import subprocess
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from PIL import Image, ImageOps, UnidentifiedImageError

from rag.errors import CorruptDocument, DocumentTooLarge, ExtractionError, OcrTimeout, UnsupportedType
from rag.ingest.extractors import detect as mime
from rag.ingest.extractors.limits import OcrLimits

log = logging.getLogger(__name__)

# What Pillow calls each format ragbot reads, and how a person names it.
_PILLOW_FORMATS = {mime.PNG: "PNG", mime.JPEG: "JPEG", mime.WEBP: "WEBP", mime.TIFF: "TIFF"}
_NAMES = {"PNG": "PNG", "JPEG": "JPEG", "WEBP": "WebP", "TIFF": "TIFF"}
# A page is not started with less time than this left: Tesseract takes about a second to load chi_sim alone.
_MIN_PAGE_SECONDS = 2.0
# Tesseract parallelises one page over all cores with OpenMP; on a shared host one thread a page reads more pages.
_ENV = {**os.environ, "OMP_THREAD_LIMIT": "1"}
# Tesseract writes Chinese with a space between every two characters; those spaces are its, not the document's.
_CJK = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef"
_CJK_GAP = re.compile(f"(?<=[{_CJK}]) +(?=[{_CJK}])")
_BLANK_LINES = re.compile(r"\n{3,}")
_BOMB_SIZE = re.compile(r"\((\d+) pixels\)")

PageLoader = Callable[[], Image.Image]


@dataclass(frozen=True, slots=True)
class OcrPages:
    """What reading a file's pages found: the text of each page read, and the pages left unread, by number."""

    texts: tuple[tuple[int, str], ...]
    read: int
    unread: tuple[int, ...]


def open_image(data: bytes, limits: OcrLimits) -> Image.Image:
    """The image `data` holds, with only its header read; UnsupportedType or CorruptDocument when it is none."""
    mime_type = mime.image_type(data)
    if mime_type is None:
        raise UnsupportedType(
            "the file is not an image (PNG, JPEG, WebP or TIFF): send a photo or a screenshot", reason="not_image"
        )
    kind = _PILLOW_FORMATS[mime_type]
    with warnings.catch_warnings():
        # The size is checked against OcrLimits before anything is decoded; Pillow's own guard would only warn.
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            return Image.open(io.BytesIO(data), formats=[kind])
        except Image.DecompressionBombError as exc:
            # Pillow refuses past twice its own limit while reading the header; its message gives the size.
            found = _BOMB_SIZE.search(str(exc))
            raise too_large(int(found.group(1)) if found else 0, limits.max_decode_pixels) from exc
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
            raise _damaged(kind, exc) from exc


def fit(image: Image.Image, limits: OcrLimits) -> Image.Image:
    """The image in grey, upright and scaled down to `max_pixels`; refused before decoding past `max_decode_pixels`."""
    width, height = image.size
    if width * height > limits.max_decode_pixels:
        raise too_large(width * height, limits.max_decode_pixels)
    scale = min(1.0, math.sqrt(limits.max_pixels / max(width * height, 1)))
    target = (max(1, int(width * scale)), max(1, int(height * scale)))
    kind = image.format or "image"
    try:
        if scale < 1.0:
            # JPEG decodes straight at 1/2, 1/4 or 1/8 size: a 40 MP photo never exists in memory at full size.
            image.draft("L", target)
        grey = image.convert("L")
        if grey.size != target and scale < 1.0:
            grey = grey.resize(target, Image.Resampling.LANCZOS)
        # A phone stores a photo as the sensor saw it and the way up in its EXIF data; Tesseract reads upright lines.
        upright = ImageOps.exif_transpose(grey)
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise _damaged(kind, exc) from exc
    return upright


def recognise(image: Image.Image, limits: OcrLimits, seconds: float) -> str:
    """The text Tesseract reads in a grey image within `seconds`; OcrTimeout past them."""
    picture = io.BytesIO()
    image.save(picture, "PPM")  # uncompressed: cheaper to write and for Leptonica to read than PNG
    command = [limits.command, "stdin", "stdout", "-l", limits.languages, "--psm", "3"]
    try:
        done = subprocess.run(
            command, input=picture.getvalue(), capture_output=True, timeout=seconds, env=_ENV, check=False
        )
    except FileNotFoundError as exc:
        raise ExtractionError(
            f"Tesseract is not installed ({limits.command} not found, OCR_COMMAND): install tesseract-ocr",
            reason="ocr_missing",
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise OcrTimeout(
            f"reading the text of an image took longer than {seconds:g} s (OCR_PAGE_SECONDS)",
            reason="ocr_timeout",
            seconds=round(seconds),
        ) from exc
    if done.returncode != 0:
        problem = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        log.warning("ocr=failed status=%d stderr=%s", done.returncode, problem[0])
        raise ExtractionError(f"Tesseract failed: {problem[0]}", reason="ocr_failed", problem=problem[0])
    return tidy(done.stdout.decode("utf-8", errors="replace"))


def tidy(text: str) -> str:
    """Tesseract's output as a person would have typed it: no spaces inside Chinese, no page-end form feed."""
    lines = (_CJK_GAP.sub("", line).rstrip() for line in text.replace("\f", "").split("\n"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def read_pages(pages: Iterable[tuple[int, PageLoader]], limits: OcrLimits) -> OcrPages:
    """The text of each page within the page count and the time budget; pages past them are counted as unread.

    A page that cannot be read (too slow, damaged, too large) is unread too, unless no page could be read at
    all: then its error is raised, so that a single bad image is refused with its own reason.
    """
    deadline = time.monotonic() + limits.total_seconds
    texts: list[tuple[int, str]] = []
    unread: list[int] = []
    read = tried = 0
    first_error: ExtractionError | None = None
    for number, load in pages:
        left = deadline - time.monotonic()
        # The first page is always tried, so a single image too slow to read says so instead of coming back empty.
        if read >= limits.max_pages or (tried and left < _MIN_PAGE_SECONDS):
            unread.append(number)
            continue
        tried += 1
        try:
            text = recognise(fit(load(), limits), limits, max(min(limits.page_seconds, left), 0.0))
        except ExtractionError as exc:
            if exc.reason == "ocr_missing":
                raise
            log.warning("ocr=page_unread page=%d reason=%s", number, exc.reason)
            first_error = first_error or exc
            unread.append(number)
            continue
        read += 1
        if text:
            texts.append((number, text))
    if read == 0 and first_error is not None:
        raise first_error
    return OcrPages(tuple(texts), read, tuple(unread))


def frames(image: Image.Image) -> Iterable[tuple[int, PageLoader]]:
    """Each frame of an image as a page (a multi-page TIFF's pages), numbered from 1."""
    count = getattr(image, "n_frames", 1)
    for index in range(count):
        yield index + 1, _frame_loader(image, index)


def _frame_loader(image: Image.Image, index: int) -> PageLoader:
    def load() -> Image.Image:
        try:
            image.seek(index)
        except (OSError, EOFError, ValueError) as exc:
            raise _damaged(image.format or "image", exc) from exc
        return image

    return load


def too_large(pixels: int, cap: int) -> DocumentTooLarge:
    """The error for an image of `pixels` (0: unknown) over the `cap` that is decoded at all."""
    if not pixels:
        return DocumentTooLarge(
            f"the image is over the {cap / 1e6:.0f} megapixels ragbot reads: scale it down and send it again",
            reason="image_too_large",
            megapixels=f">{round(cap / 1e6)}",
            max_megapixels=round(cap / 1e6),
        )
    return DocumentTooLarge(
        f"the image is {pixels / 1e6:.0f} megapixels, over the {cap / 1e6:.0f} megapixels ragbot reads: "
        "scale it down and send it again",
        reason="image_too_large",
        megapixels=round(pixels / 1e6),
        max_megapixels=round(cap / 1e6),
    )


def _damaged(kind: str, exc: BaseException) -> CorruptDocument:
    name = _NAMES.get(kind, kind)
    # Pillow names the BytesIO object when it cannot identify an image: nothing an admin could use.
    why = "not decodable" if isinstance(exc, UnidentifiedImageError) else str(exc)
    return CorruptDocument(
        f"the {name} image is damaged or incomplete ({why}): save or export it again", reason="damaged_image", kind=name
    )
