"""Word, PowerPoint and Excel: document order, one section per slide or sheet, rows named by their header."""

from __future__ import annotations

import datetime as dt
import io
import zipfile

import docx
import pytest
from pptx import Presentation

from rag.errors import CorruptDocument, DocumentTooLarge, NoTextFound
from rag.ingest.extract import ExtractLimits, extract
from tests.support.documents import make_docx, make_pptx, make_xlsx


def _replace_part(container: bytes, name: str, content: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(container)) as source, zipfile.ZipFile(buffer, "w") as target:
        for info in source.infolist():
            target.writestr(info, content if info.filename == name else source.read(info))
    return buffer.getvalue()


def _without_part(container: bytes, name: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(container)) as source, zipfile.ZipFile(buffer, "w") as target:
        for info in source.infolist():
            if info.filename != name:
                target.writestr(info, source.read(info))
    return buffer.getvalue()


def test_word_headings_paragraphs_and_tables_keep_document_order():
    document = extract(make_docx(title="Returns policy"), filename="policy.docx")

    assert document.title == "Returns policy"
    assert document.text == (
        "# Returns\n"
        "Items can be returned within 30 days.\n"
        "| Item | Days |\n"
        "| --- | --- |\n"
        "| Shoes | 30 |\n"
        "## Refunds\n"
        "Refunds take five working days."
    )


def test_word_merged_cells_count_once_and_lists_are_marked():
    document = docx.Document()
    document.add_paragraph("Bring", style="List Bullet")
    table = document.add_table(rows=2, cols=3)
    merged = table.cell(0, 0).merge(table.cell(0, 2))
    merged.text = "Opening hours"
    table.cell(1, 0).text = "Mon"
    table.cell(1, 1).text = "9"
    table.cell(1, 2).text = "17"
    buffer = io.BytesIO()
    document.save(buffer)

    assert extract(buffer.getvalue(), filename="t.docx").text == "- Bring\n| Opening hours |\n| --- |\n| Mon | 9 | 17 |"


def test_a_word_document_with_only_empty_paragraphs_has_no_text():
    document = docx.Document()
    document.add_paragraph("   ")
    buffer = io.BytesIO()
    document.save(buffer)
    with pytest.raises(NoTextFound, match="no text found in the Word document"):
        extract(buffer.getvalue(), filename="empty.docx")


def _stored(container: bytes) -> bytes:
    """The same container with every part stored uncompressed, so a test can flip a byte of text."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(container)) as source, zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            target.writestr(info.filename, source.read(info))
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda c: _replace_part(c, "word/document.xml", b"<w:document><w:body><broken"), "Namespace prefix"),
        (lambda c: _replace_part(c, "word/document.xml", b""), "Document is empty"),
        (lambda c: _without_part(c, "[Content_Types].xml"), r"no item named '\[Content_Types\]\.xml'"),
        (lambda c: _stored(c).replace(b"Items can be", b"Itemz can be"), "Bad CRC-32"),
    ],
    ids=["broken-xml", "empty-body-part", "missing-content-types", "bad-crc"],
)
def test_a_damaged_word_document_is_corrupt(damage, reason):
    with pytest.raises(CorruptDocument, match=rf"Word document is damaged \(.*{reason}.*\): save it again from Word"):
        extract(damage(make_docx()), filename="damaged.docx")


def test_slides_are_sections_with_shapes_tables_and_notes():
    document = extract(make_pptx(), filename="review.pptx")

    assert document.mime_type == "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    assert [(section.text, section.metadata) for section in document.sections] == [
        ("Quarterly review\nSales grew in every region\nNotes: Mention the new office", {"slide": 1}),
        ("Numbers\n| Region | Growth |\n| --- | --- |\n| North | 12% |", {"slide": 2}),
    ]


def test_grouped_shapes_and_line_breaks_are_read():
    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[6])
    group = slide.shapes.add_group_shape()
    box = group.shapes.add_textbox(0, 0, 100, 100)
    box.text_frame.text = "first line\vsecond line"
    buffer = io.BytesIO()
    presentation.save(buffer)

    assert extract(buffer.getvalue(), filename="g.pptx").text == "first line\nsecond line"


def test_a_presentation_over_the_slide_limit_is_refused():
    with pytest.raises(DocumentTooLarge, match="presentation has 2 slides, over the limit of 1"):
        extract(make_pptx(), filename="review.pptx", limits=ExtractLimits(max_pages=1))


def test_a_presentation_of_pictures_only_has_no_text():
    presentation = Presentation()
    presentation.slides.add_slide(presentation.slide_layouts[6])
    buffer = io.BytesIO()
    presentation.save(buffer)
    with pytest.raises(NoTextFound, match="no text found in the slides"):
        extract(buffer.getvalue(), filename="pictures.pptx")


def test_a_presentation_with_a_broken_slide_is_corrupt():
    content = _replace_part(make_pptx(), "ppt/slides/slide1.xml", b"<p:sld><broken")
    with pytest.raises(CorruptDocument, match="PowerPoint file is damaged"):
        extract(content, filename="review.pptx")


def test_each_sheet_is_a_section_with_rows_named_by_its_first_non_empty_row():
    content = make_xlsx(
        {
            "Prices": [
                ["Item", "Price", "Since"],
                ["Shoes", 30.0, dt.datetime(2024, 5, 1)],
                [None, None],
                ["Hat", 12.5],
            ],
            "Staff": [[None], [None, None], ["Name", "Role"], ["Ann", "Support\nDesk"]],
            "Empty": [],
        }
    )

    document = extract(content, filename="book.xlsx")

    assert [(section.text, section.metadata) for section in document.sections] == [
        ("Item: Shoes | Price: 30 | Since: 2024-05-01\nItem: Hat | Price: 12.5", {"sheet": "Prices"}),
        ("Name: Ann | Role: Support Desk", {"sheet": "Staff"}),
    ]
    assert document.metadata == {"sheets": ["Prices", "Staff", "Empty"]}


def test_a_workbook_of_empty_sheets_has_no_data():
    with pytest.raises(NoTextFound, match="no data found in the Excel file"):
        extract(make_xlsx({"One": [], "Two": [[None, None]]}), filename="empty.xlsx")


@pytest.mark.parametrize("part", ["xl/worksheets/sheet1.xml", "xl/workbook.xml"])
def test_a_workbook_with_broken_xml_is_corrupt(part):
    content = _replace_part(make_xlsx({"S": [["a", "b"], [1, 2]]}), part, b"<worksheet><broken")
    with pytest.raises(CorruptDocument, match="Excel file is damaged"):
        extract(content, filename="book.xlsx")
