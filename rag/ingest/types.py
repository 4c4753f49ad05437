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


@dataclass(frozen=True, slots=True)
class ExtractedDocument:
    """What an extractor found: ordered sections plus what it learnt about the file."""

    sections: tuple[Section, ...]
    mime_type: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

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
