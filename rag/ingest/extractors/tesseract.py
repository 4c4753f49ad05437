"""One run of the `tesseract` command on an image, with a deadline; the errors that say why it gave nothing."""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Sequence

from rag.errors import ExtractionError, OcrTimeout
from rag.ingest.extractors.limits import OcrLimits

log = logging.getLogger(__name__)

# Tesseract parallelises one page over all cores with OpenMP; on a shared host one thread a page reads more pages.
_ENV = {**os.environ, "OMP_THREAD_LIMIT": "1"}


def run_tesseract(arguments: Sequence[str], picture: bytes, limits: OcrLimits, seconds: float) -> bytes:
    """What `tesseract stdin stdout ARGUMENTS` prints for `picture` within `seconds`; raises when it fails."""
    done = run_tesseract_unchecked(arguments, picture, limits, seconds)
    if done.returncode != 0:
        problem = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        log.warning("ocr=failed status=%d stderr=%s", done.returncode, problem[0])
        raise ExtractionError(f"Tesseract failed: {problem[0]}", reason="ocr_failed", problem=problem[0])
    return done.stdout


def run_tesseract_unchecked(
    arguments: Sequence[str], picture: bytes, limits: OcrLimits, seconds: float
) -> subprocess.CompletedProcess[bytes]:
    """The finished `tesseract stdin stdout ARGUMENTS` run, whatever its exit status; OcrTimeout past `seconds`."""
    command = [limits.command, "stdin", "stdout", *arguments]
    try:
        return subprocess.run(command, input=picture, capture_output=True, timeout=seconds, env=_ENV, check=False)
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
