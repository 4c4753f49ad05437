"""What damaged files raise inside the parsing libraries, and how to quote it in one line."""

from __future__ import annotations

import zipfile
import zlib
from xml.etree.ElementTree import ParseError

from lxml.etree import LxmlError

# A ZIP-based file (docx, pptx, xlsx, epub) with a missing part, a bad CRC or broken XML surfaces as one
# of these from zipfile, lxml, ElementTree (openpyxl's read-only mode, EPUB) or the object layers on them.
CONTAINER_ERRORS: tuple[type[Exception], ...] = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    LxmlError,
    ParseError,
    KeyError,
    ValueError,
    IndexError,
    TypeError,
    AttributeError,
)

_MAX_REASON = 160


def reason(exc: BaseException) -> str:
    """The exception's message on one short line, for an admin-facing error."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 1] + "…"
