"""detect_type: the content decides first, the file name second, the declared content type last."""

from __future__ import annotations

import pytest

from rag.errors import CorruptDocument, EncryptedDocument, UnsupportedType
from rag.ingest.extract import detect_type
from tests.support.documents import make_docx, make_epub, make_pdf, make_pptx, make_xlsx, make_zip

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda: make_pdf(["hello"]), "application/pdf"),
        (make_docx, DOCX),
        (make_pptx, PPTX),
        (lambda: make_xlsx({"Sheet": [["a"]]}), XLSX),
        (lambda: make_epub([("One", "text")]), "application/epub+zip"),
    ],
    ids=["pdf", "docx", "pptx", "xlsx", "epub"],
)
def test_binary_formats_are_known_by_their_content_alone(build, expected):
    assert detect_type(build()) == expected


def test_a_word_document_named_pdf_is_read_as_word():
    assert detect_type(make_docx(), filename="report.pdf", content_type="application/pdf") == DOCX


def test_plain_text_named_docx_is_read_as_text():
    assert detect_type(b"Opening hours are 9 to 5.", filename="hours.docx") == "text/plain"


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("notes.md", "text/markdown"),
        ("notes.markdown", "text/markdown"),
        ("page.htm", "text/html"),
        ("page.html", "text/html"),
        ("table.csv", "text/csv"),
        ("data.json", "application/json"),
        ("mail.eml", "message/rfc822"),
        ("notes.txt", "text/plain"),
        (None, "text/plain"),
        ("C:\\Users\\ann\\NOTES.MD", "text/markdown"),
    ],
)
def test_text_is_typed_by_its_extension(filename, expected):
    assert detect_type(b"a,b\n1,2\n", filename=filename) == expected


@pytest.mark.parametrize(
    "content",
    [
        b"<!DOCTYPE html><html><body>hi</body></html>",
        b"\n  <html lang='en'><p>hi</p></html>",
        b"<!-- c --><html>x</html>",
    ],
)
def test_html_is_recognised_by_its_start_whatever_the_name(content):
    assert detect_type(content, filename="page.txt") == "text/html"


def test_mail_headers_are_recognised_without_a_name():
    content = b"From: ann@example.com\nTo: help@example.com\nSubject: Hi\n\nBody\n"
    assert detect_type(content) == "message/rfc822"


def test_colon_lines_without_a_sender_are_not_mail():
    assert detect_type(b"title: Notes\ndate: 2024-01-01\n\nBody\n") == "text/plain"


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("text/html; charset=utf-8", "text/html"),
        ("application/json", "application/json"),
        ("text/csv", "text/csv"),
        ("text/markdown", "text/markdown"),
        ("application/octet-stream", "text/plain"),
    ],
)
def test_the_declared_content_type_decides_last(content_type, expected):
    assert detect_type(b"[1, 2]", filename="/api/items", content_type=content_type) == expected


def test_the_extension_wins_over_the_declared_content_type():
    assert detect_type(b"a,b\n", filename="table.csv", content_type="application/json") == "text/csv"


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        (b"GIF89a" + bytes(64), "GIF image"),
        (b"\x1f\x8b\x08\x00" + bytes(64), "gzip archive"),
        (b"\x7fELF\x02\x01\x01" + bytes(64), "ELF executable"),
        (b"MZ\x90\x00\x03\x00" + bytes(64), "Windows executable"),
        (b"\x00\x00\x00\x18ftypmp42" + bytes(64), "MP4"),
        (b"{\\rtf1\\ansi hello}", "RTF document"),
        (b"SQLite format 3\x00" + bytes(64), "SQLite database"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_known_binaries_are_refused_by_name(content, kind):
    with pytest.raises(UnsupportedType, match=kind):
        detect_type(content, filename="upload.txt")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"\x89PNG\r\n\x1a\n" + bytes(64), "image/png"),
        (b"\xff\xd8\xff\xe0" + bytes(64), "image/jpeg"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 " + bytes(64), "image/webp"),
        (b"II*\x00" + bytes(64), "image/tiff"),
        (b"MM\x00*" + bytes(64), "image/tiff"),
    ],
    ids=["png", "jpeg", "webp", "tiff-le", "tiff-be"],
)
def test_images_are_read_by_their_content_whatever_their_name(content, expected):
    assert detect_type(content, filename="notes.txt") == expected


def test_an_old_office_file_is_refused_with_what_to_do():
    with pytest.raises(UnsupportedType, match=r"old Office files.*save it as \.docx"):
        detect_type(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512), filename="report.doc")


def test_a_password_protected_office_file_is_reported_as_encrypted():
    # Office wraps an encrypted .docx in an OLE file with an "EncryptedPackage" stream.
    content = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512) + "EncryptedPackage".encode("utf-16-le")
    with pytest.raises(EncryptedDocument, match="password-protected"):
        detect_type(content, filename="report.docx")


def test_a_plain_zip_archive_is_refused():
    with pytest.raises(UnsupportedType, match="ZIP archives"):
        detect_type(make_zip({"notes.txt": b"hello"}), filename="notes.zip")


def test_an_opendocument_file_is_refused_with_what_to_do():
    content = make_zip({"mimetype": b"application/vnd.oasis.opendocument.text", "content.xml": b"<x/>"})
    with pytest.raises(UnsupportedType, match="OpenDocument"):
        detect_type(content, filename="notes.odt")


def test_a_truncated_word_document_is_corrupt():
    content = make_docx()
    with pytest.raises(CorruptDocument, match=r"report\.docx is a damaged Word document"):
        detect_type(content[: len(content) // 2], filename="report.docx")


def test_unknown_binary_content_is_unsupported():
    with pytest.raises(UnsupportedType, match="unrecognised binary file"):
        detect_type(bytes(range(256)) * 8, filename="blob.bin")


def test_unknown_binary_content_named_as_a_supported_type_is_corrupt():
    with pytest.raises(CorruptDocument, match=r"scan\.pdf is not a readable PDF"):
        detect_type(bytes(range(256)) * 8, filename="scan.pdf")


@pytest.mark.parametrize("content", [b"MZ is the name of our team.", b"ID3 tags explained", b"BZh sounds odd"])
def test_text_that_starts_like_a_binary_signature_is_still_text(content):
    assert detect_type(content) == "text/plain"
