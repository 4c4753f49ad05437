"""File type detection: the content decides first, the file name second, the declared content type last."""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
import zlib
from dataclasses import dataclass

from rag.errors import CorruptDocument, EncryptedDocument, UnsupportedType
from rag.ingest.extractors.damage import reason
from rag.ingest.extractors.text import DecodedText, decode_text

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
EPUB = "application/epub+zip"
TEXT = "text/plain"
MARKDOWN = "text/markdown"
HTML = "text/html"
CSV = "text/csv"
JSON = "application/json"
EML = "message/rfc822"
PNG = "image/png"
JPEG = "image/jpeg"
WEBP = "image/webp"
TIFF = "image/tiff"

ZIP_CONTAINERS = frozenset({DOCX, PPTX, XLSX, EPUB})
IMAGES = frozenset({PNG, JPEG, WEBP, TIFF})
SUPPORTED = (
    "PDF, Word (.docx), PowerPoint (.pptx), Excel (.xlsx), EPUB, e-mail (.eml), HTML, Markdown, CSV, JSON, text "
    "or images (PNG, JPEG, WebP, TIFF)"
)

_OOXML_MAIN_PARTS = (("word/document.xml", DOCX), ("ppt/presentation.xml", PPTX), ("xl/workbook.xml", XLSX))
_BINARY_EXTENSIONS = {
    ".pdf": PDF,
    ".docx": DOCX,
    ".pptx": PPTX,
    ".xlsx": XLSX,
    ".epub": EPUB,
    ".png": PNG,
    ".jpg": JPEG,
    ".jpeg": JPEG,
    ".webp": WEBP,
    ".tif": TIFF,
    ".tiff": TIFF,
}
_TEXT_EXTENSIONS = {
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".html": HTML,
    ".htm": HTML,
    ".xhtml": HTML,
    ".csv": CSV,
    ".tsv": CSV,
    ".json": JSON,
    ".eml": EML,
}
_TEXT_CONTENT_TYPES = {
    "text/markdown": MARKDOWN,
    "text/x-markdown": MARKDOWN,
    "text/html": HTML,
    "application/xhtml+xml": HTML,
    "text/csv": CSV,
    "application/json": JSON,
    "message/rfc822": EML,
}
_NAMES = {
    PDF: "PDF",
    DOCX: "Word document",
    PPTX: "PowerPoint file",
    XLSX: "Excel file",
    EPUB: "EPUB",
    PNG: "PNG image",
    JPEG: "JPEG image",
    WEBP: "WebP image",
    TIFF: "TIFF image",
}
# Leading bytes of the images ragbot reads with OCR.
_IMAGE_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", PNG),
    (b"\xff\xd8\xff", JPEG),
    (b"II*\x00", TIFF),
    (b"MM\x00*", TIFF),
)

# What to tell the admin about a kind of file ragbot does not read: the reason id a chat words, and the advice.
_IMAGE = ("unsupported_image", "save it as PNG or JPEG and upload it again")
_ARCHIVE = ("unsupported_archive", "unpack it and upload the files one by one")
_PROGRAM = ("unsupported_program", "upload a document instead")
_MEDIA = ("unsupported_media", "upload a transcript instead")
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
# Leading bytes of common formats ragbot does not read, and what to tell the admin about each.
_SIGNATURES: tuple[tuple[bytes, str, tuple[str, str]], ...] = (
    (b"GIF87a", "GIF image", _IMAGE),
    (b"GIF89a", "GIF image", _IMAGE),
    (b"\x1f\x8b", "gzip archive", _ARCHIVE),
    (b"BZh", "bzip2 archive", _ARCHIVE),
    (b"\xfd7zXZ\x00", "xz archive", _ARCHIVE),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip archive", _ARCHIVE),
    (b"Rar!\x1a\x07", "RAR archive", _ARCHIVE),
    (b"\x28\xb5\x2f\xfd", "zstd archive", _ARCHIVE),
    (b"\x7fELF", "ELF executable", _PROGRAM),
    (b"MZ", "Windows executable", _PROGRAM),
    (b"\xca\xfe\xba\xbe", "Java class or macOS executable", _PROGRAM),
    (b"\xcf\xfa\xed\xfe", "macOS executable", _PROGRAM),
    (b"\x00asm", "WebAssembly module", _PROGRAM),
    (b"SQLite format 3\x00", "SQLite database", ("unsupported_database", "export the tables as CSV and upload those")),
    (b"{\\rtf", "RTF document", ("unsupported_rtf", "save it as .docx or PDF and upload it again")),
    (b"%!PS", "PostScript document", ("unsupported_postscript", "convert it to PDF and upload it again")),
    (b"OggS", "Ogg media file", _MEDIA),
    (b"fLaC", "FLAC audio file", _MEDIA),
    (b"ID3", "MP3 audio file", _MEDIA),
)
_RIFF_KINDS = {b"WAVE": ("WAV audio file", _MEDIA), b"AVI ": ("AVI video", _MEDIA)}
# The `mimetype` entry of an EPUB or OpenDocument file is one short line.
_MAX_SMALL_PART = 1024
_ENCRYPTED = 0x1
_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, ValueError, EOFError, NotImplementedError)
_HTML_START = re.compile(r"<(?:!doctype\s+html|html[\s>])", re.IGNORECASE)
_HEADER_LINE = re.compile(r"([!-9;-~]+):[ \t]")
_MAIL_HEADERS = frozenset({"from", "to", "cc", "subject", "date", "message-id", "received", "mime-version", "reply-to"})
_MAIL_ORIGIN = frozenset({"from", "received", "message-id"})


@dataclass(frozen=True, slots=True)
class Detection:
    """A detected MIME type, with the decoded text when the content is text."""

    mime_type: str
    decoded: DecodedText | None = None


def detect(data: bytes, filename: str | None = None, content_type: str | None = None) -> Detection:
    """Decide what `data` is, raising UnsupportedType (naming the kind) for what ragbot cannot read."""
    extension = posixpath.splitext((filename or "").replace("\\", "/").lower())[1]
    if data.lstrip(b"\t\n\r\f ")[:5] == b"%PDF-":
        return Detection(PDF)
    if data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return Detection(_zip_type(data, filename, extension))
    if data.startswith(_OLE):
        raise _legacy_office(data)
    if (image := image_type(data)) is not None:
        return Detection(image)
    _refuse_known_binary(data)
    decoded = decode_text(data)
    if decoded is None:
        if extension in _BINARY_EXTENSIONS:
            label = _NAMES[_BINARY_EXTENSIONS[extension]]
            raise CorruptDocument(
                f"{filename} is not a readable {label} (damaged or mislabelled): export it again",
                reason="mislabelled",
                name=filename or "",
            )
        raise UnsupportedType(f"unrecognised binary file: upload {SUPPORTED}", reason="unsupported_binary")
    return Detection(_text_type(decoded.text, extension, content_type), decoded)


def image_type(data: bytes) -> str | None:
    """The MIME type of the image `data` starts like (PNG, JPEG, WebP, TIFF), or None for anything else."""
    for signature, mime_type in _IMAGE_SIGNATURES:
        if data.startswith(signature):
            return mime_type
    if data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return WEBP
    return None


def _zip_type(data: bytes, filename: str | None, extension: str) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            for part, mime_type in _OOXML_MAIN_PARTS:
                if part in names:
                    return mime_type
            declared = _small_part(archive, "mimetype")
    except _ZIP_ERRORS as exc:
        label = _NAMES.get(_BINARY_EXTENSIONS.get(extension, ""), "ZIP container")
        raise CorruptDocument(
            f"{filename or 'file'} is a damaged {label} ({reason(exc)}): export it again",
            reason="mislabelled",
            name=filename or "",
        ) from exc
    if declared == EPUB:
        return EPUB
    if declared.startswith("application/vnd.oasis.opendocument."):
        raise UnsupportedType(
            "OpenDocument files (.odt/.ods/.odp) are not supported: save it as .docx, .xlsx or .pptx",
            reason="unsupported_opendocument",
        )
    raise UnsupportedType(f"ZIP archives are not supported: {_ARCHIVE[1]}", reason=_ARCHIVE[0])


def _small_part(archive: zipfile.ZipFile, name: str) -> str:
    try:
        info = archive.getinfo(name)
    except KeyError:
        return ""
    if info.file_size > _MAX_SMALL_PART or info.flag_bits & _ENCRYPTED or info.compress_type not in _METHODS:
        return ""
    # A bounded read: `archive.read()` would inflate the whole stream, however small the header says it is.
    # (zipfile bounds only store and deflate reads, hence _METHODS.)
    with archive.open(info) as part:
        return part.read(_MAX_SMALL_PART).decode("ascii", errors="replace").strip()


def _legacy_office(data: bytes) -> EncryptedDocument | UnsupportedType:
    # Word and Excel store a password-protected .docx/.xlsx as an OLE file holding an "EncryptedPackage" stream.
    if "EncryptedPackage".encode("utf-16-le") in data:
        return EncryptedDocument(
            "Office file is password-protected: remove the password and upload it again", reason="encrypted"
        )
    return UnsupportedType(
        "old Office files (.doc/.xls/.ppt) are not supported: save it as .docx, .xlsx or .pptx",
        reason="unsupported_old_office",
    )


def _refuse_known_binary(data: bytes) -> None:
    for signature, kind, (why, advice) in _SIGNATURES:
        if data.startswith(signature):
            if len(signature) <= 3 and decode_text(data[:4096]) is not None:
                return  # two or three letters could start a text file ("MZ", "BZh", "ID3"): text wins
            raise UnsupportedType(f"{kind} files are not supported: {advice}", reason=why)
    if data.startswith(b"RIFF") and data[8:12] in _RIFF_KINDS:
        kind, (why, advice) = _RIFF_KINDS[data[8:12]]
        raise UnsupportedType(f"{kind} files are not supported: {advice}", reason=why)
    if data[4:8] == b"ftyp":
        raise UnsupportedType(f"MP4/QuickTime media files are not supported: {_MEDIA[1]}", reason=_MEDIA[0])


def _text_type(text: str, extension: str, content_type: str | None) -> str:
    head = text[:2048].lstrip("\ufeff \t\r\n")
    if head.startswith("<") and _HTML_START.search(head[:1024]):
        return HTML
    if extension in _TEXT_EXTENSIONS:
        return _TEXT_EXTENSIONS[extension]
    if _looks_like_mail(text):
        return EML
    declared = (content_type or "").split(";")[0].strip().lower()
    return _TEXT_CONTENT_TYPES.get(declared, TEXT)


def _looks_like_mail(text: str) -> bool:
    """An RFC 822 header block: header lines up to the first blank line, naming a sender or a relay."""
    names: set[str] = set()
    for index, line in enumerate(text[:16384].splitlines()):
        if not line.strip():
            break
        if index == 0 and line.startswith("From "):
            continue  # the mbox separator line
        if line[:1] in " \t" and names:
            continue  # a folded header
        match = _HEADER_LINE.match(line)
        if match is None:
            return False
        names.add(match.group(1).lower())
    known = names & _MAIL_HEADERS
    return len(known) >= 2 and bool(known & _MAIL_ORIGIN)
