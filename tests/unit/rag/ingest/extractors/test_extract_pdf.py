"""PDF: one section per page with its number, the metadata title, and clear errors for what cannot be read."""

from __future__ import annotations

import io

import pytest
from pypdf import PdfReader, PdfWriter

from rag.errors import CorruptDocument, DocumentTooLarge, EncryptedDocument, NoTextFound
from rag.ingest.extract import ExtractLimits, extract
from tests.support.documents import make_pdf, make_pdf_without_text


def _encrypted(user_password: str, algorithm: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(["Secret plans"]))))
    writer.encrypt(user_password, owner_password="owner", algorithm=algorithm)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def test_each_page_is_a_section_numbered_from_one():
    document = extract(make_pdf(["Opening hours", "Return policy"], title="Shop handbook"), filename="h.pdf")

    assert document.mime_type == "application/pdf"
    assert document.title == "Shop handbook"
    assert [(section.text, section.metadata) for section in document.sections] == [
        ("Opening hours", {"page": 1}),
        ("Return policy", {"page": 2}),
    ]
    assert document.metadata == {"pages": 2}


def test_blank_pages_are_skipped_but_keep_the_numbering():
    document = extract(make_pdf(["First", "", "Third"]), filename="h.pdf")
    assert [section.metadata["page"] for section in document.sections] == [1, 3]


def test_a_pdf_without_a_text_layer_or_legible_scan_says_so():
    with pytest.raises(NoTextFound, match=r"no text found in the PDF, not even by OCR"):
        extract(make_pdf_without_text(), filename="scan.pdf")


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-256"])
def test_a_password_protected_pdf_is_refused(algorithm):
    with pytest.raises(EncryptedDocument, match="PDF is password-protected: remove the password"):
        extract(_encrypted("secret", algorithm), filename="locked.pdf")


def test_a_pdf_encrypted_with_an_empty_password_is_read():
    assert extract(_encrypted("", "AES-256"), filename="protected.pdf").text == "Secret plans"


@pytest.mark.parametrize(
    "content",
    [
        make_pdf(["Hello"])[:400],
        make_pdf(["Hello"])[:100],
        b"%PDF-1.7\n" + b"garbage " * 100,
        b"%PDF-1.4",
    ],
    ids=["truncated", "header-and-a-bit", "garbage-body", "header-only"],
)
def test_a_damaged_pdf_is_corrupt(content):
    with pytest.raises(CorruptDocument, match="PDF is damaged"):
        extract(content, filename="broken.pdf")


def test_a_pdf_over_the_page_limit_is_refused():
    with pytest.raises(DocumentTooLarge, match="PDF has 3 pages, over the limit of 2"):
        extract(make_pdf(["a", "b", "c"]), filename="long.pdf", limits=ExtractLimits(max_pages=2))


@pytest.mark.parametrize(
    "placeholder", [None, "untitled", "Untitled", "Untitled-1", "Document1", "Microsoft Word - notes.docx", "  "]
)
def test_a_pdf_without_a_real_title_has_none_so_its_file_name_stands_in(placeholder):
    # ReportLab writes "untitled" when no title is set, Word's PDF printer "Microsoft Word - <file>".
    assert extract(make_pdf(["Opening hours"], title=placeholder), filename="h.pdf").title == ""


def _pdf_with_type_sizes(lines: list[tuple[float, str]]) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    for number, (size, text) in enumerate(lines):
        pdf.setFont("Helvetica", size)
        pdf.drawString(72, 760 - 24 * number, text)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def test_lines_in_larger_type_than_the_body_become_headings_by_size():
    data = _pdf_with_type_sizes(
        [
            (18, "Security policy"),
            (14, "Devices"),
            (10, "Lock your screen whenever you leave your desk."),
            (10, "Private USB sticks must not be connected to company laptops."),
            (14, "Incidents"),
            (10, "Report security incidents within one hour."),
        ]
    )
    assert extract(data, filename="p.pdf").text == (
        "# Security policy\n"
        "## Devices\n"
        "Lock your screen whenever you leave your desk.\n"
        "Private USB sticks must not be connected to company laptops.\n"
        "## Incidents\n"
        "Report security incidents within one hour."
    )


def test_a_pdf_set_in_one_type_size_has_no_headings():
    data = _pdf_with_type_sizes([(11, "Short line"), (11, "Another line of the same size.")])
    assert extract(data, filename="p.pdf").text == "Short line\nAnother line of the same size."
