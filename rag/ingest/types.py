"""Values that flow through ingestion: extracted sections and split chunks with their offsets."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

LengthFunction = Callable[[str], int]


@dataclass(frozen=True, slots=True)
class Section:
    """A part of an extracted document: a page, a slide, a sheet, or the whole text."""

    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


Cell = str | int | float | bool | None
"""A table cell as extraction keeps it: numbers stay numbers, dates become ISO text."""


@dataclass(frozen=True, slots=True)
class ExtractedTable:
    """A sheet's rows as they were (the header row first), for data analysis beside the text; '' names a CSV's."""

    name: str
    rows: tuple[tuple[Cell, ...], ...]


@dataclass(frozen=True, slots=True)
class ExtractedDocument:
    """What an extractor found: ordered sections plus what it learnt about the file."""

    sections: tuple[Section, ...]
    mime_type: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # CSV and spreadsheets only: their rows, kept as tables (storage.tables) as well as split into chunks.
    tables: tuple[ExtractedTable, ...] = ()

    @property
    def text(self) -> str:
        """All sections joined by blank lines."""
        return "\n\n".join(section.text for section in self.sections)


@dataclass(frozen=True, slots=True)
class TextChunk:
    """A piece of a document: `text == document[start:end]`, `position` is its index in the split."""

    text: str
    start: int
    end: int
    position: int
    metadata: Mapping[str, Any] = field(default_factory=dict)
