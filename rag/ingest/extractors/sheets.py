"""Excel (.xlsx) rows with openpyxl: one section per sheet, rows named by the sheet's header row."""

from __future__ import annotations

import io

import openpyxl
from openpyxl.utils.exceptions import InvalidFileException

from rag.errors import CorruptDocument
from rag.ingest.extractors.damage import CONTAINER_ERRORS, reason
from rag.ingest.extractors.tabular import format_rows, kept_table
from rag.ingest.types import ExtractedDocument, ExtractedTable, Section

_XLSX_ERRORS: tuple[type[Exception], ...] = (*CONTAINER_ERRORS, InvalidFileException)


def extract_xlsx(data: bytes, *, mime_type: str) -> ExtractedDocument:
    """One section per non-empty worksheet with {'sheet': name}; cached values, never formulas."""
    sections: list[Section] = []
    tables: list[ExtractedTable] = []
    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        try:
            names = [sheet.title for sheet in workbook.worksheets]
            for sheet in workbook.worksheets:
                table = kept_table(sheet.title, sheet.iter_rows(values_only=True))
                lines = format_rows(table.rows)
                if lines:
                    sections.append(Section("\n".join(lines), {"sheet": sheet.title}))
                    tables.append(table)
            title = workbook.properties.title or ""
        finally:
            workbook.close()
    except _XLSX_ERRORS as exc:
        raise CorruptDocument(
            f"Excel file is damaged ({reason(exc)}): save it again from Excel", reason="damaged_xlsx"
        ) from exc
    return ExtractedDocument(
        sections=tuple(sections),
        mime_type=mime_type,
        title=title.strip(),
        metadata={"sheets": names},
        tables=tuple(tables),
    )
