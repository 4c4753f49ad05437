"""Builders for the files the extraction tests read: each makes a real document in memory with its own library."""

from __future__ import annotations

import io
import zipfile
from email.message import EmailMessage

import docx
import openpyxl
from pptx import Presentation
from pptx.util import Inches
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas


def make_pdf(pages: list[str], *, title: str | None = None) -> bytes:
    """A PDF with one line of text per page."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    if title is not None:
        pdf.setTitle(title)
    for text in pages:
        pdf.drawString(72, 720, text)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def make_pdf_without_text() -> bytes:
    """A PDF whose only page is drawn shapes, as a scan's picture would be: no text layer."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    pdf.rect(72, 500, 300, 200, fill=1)
    pdf.line(72, 480, 372, 480)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def make_docx(*, title: str = "") -> bytes:
    """A Word document: a heading, a paragraph, a table, a subheading and a closing paragraph, in that order."""
    document = docx.Document()
    document.core_properties.title = title
    document.add_heading("Returns", level=1)
    document.add_paragraph("Items can be returned within 30 days.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Item"
    table.cell(0, 1).text = "Days"
    table.cell(1, 0).text = "Shoes"
    table.cell(1, 1).text = "30"
    document.add_heading("Refunds", level=2)
    document.add_paragraph("Refunds take five working days.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def make_pptx() -> bytes:
    """Two slides: a title slide with speaker notes, and a slide holding a table."""
    presentation = Presentation()
    first = presentation.slides.add_slide(presentation.slide_layouts[0])
    first.shapes.title.text = "Quarterly review"
    first.placeholders[1].text = "Sales grew in every region"
    first.notes_slide.notes_text_frame.text = "Mention the new office"
    second = presentation.slides.add_slide(presentation.slide_layouts[5])
    second.shapes.title.text = "Numbers"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    table.cell(0, 0).text = "Region"
    table.cell(0, 1).text = "Growth"
    table.cell(1, 0).text = "North"
    table.cell(1, 1).text = "12%"
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def make_xlsx(sheets: dict[str, list[list[object]]]) -> bytes:
    """A workbook with one worksheet per entry, filled with its rows."""
    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for name, rows in sheets.items():
        sheet = workbook.create_sheet(name)
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def make_epub(chapters: list[tuple[str, str]], *, title: str = "Handbook") -> bytes:
    """A minimal EPUB 3: the mimetype entry, container.xml, an OPF package and one XHTML file per chapter."""
    manifest = "".join(
        f'<item id="c{i}" href="text/ch{i}.xhtml" media-type="application/xhtml+xml"/>' for i in range(len(chapters))
    )
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        archive.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0" encoding="UTF-8"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title></metadata>'
            f"<manifest>{manifest}</manifest><spine>{spine}</spine></package>",
        )
        for i, (heading, body) in enumerate(chapters):
            archive.writestr(
                f"OEBPS/text/ch{i}.xhtml",
                '<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
                f"<head><title>{heading}</title></head><body><h1>{heading}</h1><p>{body}</p></body></html>",
            )
    return buffer.getvalue()


def make_eml(*, html: str | None = None, plain: str | None = None, attachment: str | None = None) -> bytes:
    """An e-mail with a subject, sender, recipient and date, a plain and/or HTML body and maybe an attachment."""
    message = EmailMessage()
    message["Subject"] = "Refund for order 1234"
    message["From"] = "Ann Customer <ann@example.com>"
    message["To"] = "support@example.com"
    message["Date"] = "Mon, 03 Jun 2024 10:00:00 +0000"
    if plain is not None:
        message.set_content(plain)
    if html is not None:
        if plain is None:
            message.set_content(html, subtype="html")
        else:
            message.add_alternative(html, subtype="html")
    if attachment is not None:
        message.add_attachment(b"%PDF-1.4 receipt", maintype="application", subtype="pdf", filename=attachment)
    return bytes(message)


def make_zip(entries: dict[str, bytes]) -> bytes:
    """A deflated ZIP archive holding `entries`."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def make_zip_bomb(part: str = "word/document.xml", *, unpacked_mb: int = 300) -> bytes:
    """A ZIP whose `part` is `unpacked_mb` MB of zeros, packed about 200:1 (fast level-1 deflate)."""
    buffer = io.BytesIO()
    chunk = bytes(1_000_000)
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open(part, "w", force_zip64=True) as entry:
            for _ in range(unpacked_mb):
                entry.write(chunk)
    return buffer.getvalue()
