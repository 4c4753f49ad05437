"""Word (.docx) text with python-docx: headings as '#' lines, paragraphs and tables in document order."""

from __future__ import annotations

import io
import re

import docx
from docx.opc.exceptions import OpcError
from docx.table import Table
from docx.text.paragraph import Paragraph

from rag.errors import CorruptDocument
from rag.ingest.extractors.damage import CONTAINER_ERRORS, reason
from rag.ingest.extractors.tabular import pipe_rows
from rag.ingest.types import ExtractedDocument, Section

_HEADING = re.compile(r"Heading ([1-9])")

_DOCX_ERRORS: tuple[type[Exception], ...] = (*CONTAINER_ERRORS, OpcError)


def extract_docx(data: bytes, *, mime_type: str) -> ExtractedDocument:
    """The body as one section; the core-properties title as the title."""
    try:
        document = docx.Document(io.BytesIO(data))
        lines: list[str] = []
        for block in document.iter_inner_content():
            if isinstance(block, Table):
                lines.extend(_table_lines(block))
            else:
                line = _paragraph_line(block)
                if line:
                    lines.append(line)
        title = document.core_properties.title or ""
    except _DOCX_ERRORS as exc:
        raise CorruptDocument(
            f"Word document is damaged ({reason(exc)}): save it again from Word", reason="damaged_docx"
        ) from exc
    return ExtractedDocument(sections=(Section("\n".join(lines)),), mime_type=mime_type, title=title.strip())


def _paragraph_line(paragraph: Paragraph) -> str:
    text = paragraph.text.strip()
    if not text:
        return ""
    style = paragraph.style.name if paragraph.style is not None else None
    style = style or ""
    heading = _HEADING.fullmatch(style)
    if heading is not None:
        return "#" * int(heading.group(1)) + " " + text
    if style == "Title":
        return "# " + text
    if style.startswith("List"):
        return "- " + text
    return text


def _table_lines(table: Table) -> list[str]:
    """One Markdown pipe row per row (the first the header); a merged cell counts once."""
    rows: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            # python-docx repeats the same cell object once per grid column it spans.
            if cell is previous:
                continue
            previous = cell
            cells.append(" ".join(cell.text.split()))
        if any(cells):
            rows.append(cells)
    return pipe_rows(rows)
