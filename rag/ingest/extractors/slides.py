"""PowerPoint (.pptx) text with python-pptx: one section per slide, shapes, tables and speaker notes."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator

from pptx import Presentation
from pptx.exc import PythonPptxError
from pptx.shapes.autoshape import Shape
from pptx.shapes.base import BaseShape
from pptx.shapes.graphfrm import GraphicFrame
from pptx.shapes.group import GroupShape
from pptx.slide import Slide

from rag.errors import CorruptDocument, DocumentTooLarge
from rag.ingest.extractors.damage import CONTAINER_ERRORS, reason
from rag.ingest.extractors.tabular import pipe_rows
from rag.ingest.types import ExtractedDocument, Section

_PPTX_ERRORS: tuple[type[Exception], ...] = (*CONTAINER_ERRORS, PythonPptxError)


def extract_pptx(data: bytes, *, max_pages: int, mime_type: str) -> ExtractedDocument:
    """One section per slide with text, with {'slide': n} counted from 1."""
    try:
        presentation = Presentation(io.BytesIO(data))
        slides = list(presentation.slides)
        if len(slides) > max_pages:
            raise DocumentTooLarge(
                f"presentation has {len(slides)} slides, over the limit of {max_pages}: split it into smaller files",
                reason="too_many_slides",
                slides=len(slides),
                max_slides=max_pages,
            )
        sections = []
        for number, slide in enumerate(slides, start=1):
            text = _slide_text(slide)
            if text.strip():
                sections.append(Section(text, {"slide": number}))
        title = presentation.core_properties.title or ""
    except _PPTX_ERRORS as exc:
        raise CorruptDocument(
            f"PowerPoint file is damaged ({reason(exc)}): save it again from PowerPoint", reason="damaged_pptx"
        ) from exc
    return ExtractedDocument(
        sections=tuple(sections), mime_type=mime_type, title=title.strip(), metadata={"slides": len(slides)}
    )


def _slide_text(slide: Slide) -> str:
    parts: list[str] = []
    for shape in _walk(slide.shapes):
        if isinstance(shape, Shape) and shape.has_text_frame:
            parts.append(shape.text_frame.text)
        elif isinstance(shape, GraphicFrame) and shape.has_table:
            rows = [[" ".join(cell.text.split()) for cell in row.cells] for row in shape.table.rows]
            parts.extend(pipe_rows([cells for cells in rows if any(cells)]))
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame
        if notes is not None and notes.text.strip():
            parts.append("Notes: " + notes.text)
    # python-pptx marks a line break inside a paragraph with a vertical tab.
    return "\n".join(part.replace("\v", "\n").strip() for part in parts if part.strip())


def _walk(shapes: Iterable[BaseShape]) -> Iterator[BaseShape]:
    """Every shape, with the members of groups (and groups of groups) in place of the group."""
    pending = list(shapes)[::-1]
    while pending:
        shape = pending.pop()
        if isinstance(shape, GroupShape):
            pending.extend(list(shape.shapes)[::-1])
        else:
            yield shape
