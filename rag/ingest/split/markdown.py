"""Markdown splitting: one section per ATX header (outside code fences), each chunk tagged with its header path."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.ingest.split.engine import DEFAULT_SEPARATORS, Splitter, check_sizes
from rag.ingest.types import LengthFunction, TextChunk

# CommonMark: up to three spaces of indent; a fence is 3+ backticks or tildes; an ATX header is 1-6
# "#" followed by a space, a tab or the end of the line.
_LINE = re.compile(
    r"^ {0,3}(?:(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)|(?P<hashes>#{1,6})(?P<title>[ \t][^\n]*)?)$",
    re.MULTILINE,
)
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")


@dataclass(frozen=True, slots=True)
class Heading:
    """An ATX heading line: `text[start:end]` is the line (without its newline), `title` its words."""

    start: int
    end: int
    level: int
    title: str


@dataclass(frozen=True, slots=True)
class Outline:
    """A Markdown text's headings and fenced code blocks (offset ranges), both in text order."""

    headings: tuple[Heading, ...]
    fences: tuple[tuple[int, int], ...]


def outline(text: str) -> Outline:
    """The ATX headings outside fenced code, and the fenced blocks (an unclosed fence runs to the end)."""
    headings: list[Heading] = []
    fences: list[tuple[int, int]] = []
    fence: tuple[str, int, int] | None = None  # (character, length, where the block starts)
    for match in _LINE.finditer(text):
        marker = match.group("fence")
        if marker is not None:
            if fence is None:
                if not (marker[0] == "`" and "`" in match.group("info")):  # backtick info strings have none
                    fence = (marker[0], len(marker), match.start())
            elif marker[0] == fence[0] and len(marker) >= fence[1] and not match.group("info").strip():
                fences.append((fence[2], match.end()))
                fence = None
        elif fence is None:
            title = _CLOSING_HASHES.sub("", match.group("title") or "").strip()
            headings.append(Heading(match.start(), match.end(), len(match.group("hashes")), title))
    if fence is not None:
        fences.append((fence[2], len(text)))
    return Outline(tuple(headings), tuple(fences))


def split_markdown(text: str, *, max_size: int, overlap: int, length: LengthFunction = len) -> list[TextChunk]:
    """Split at markdown headers; metadata["headers"] is the chunk's header path, e.g. ["Install", "Linux"].

    A section holding only its header line joins the section after it, so no chunk is a bare title.
    Sections longer than max_size are split recursively within the section, every piece keeping the
    section's header path. Text before the first header has the path [].
    """
    check_sizes(max_size, overlap)
    chunks: list[TextChunk] = []
    for start, end, headers in _sections(text):
        splitter = Splitter(text, max_size, overlap, length)
        splitter.split(start, end, DEFAULT_SEPARATORS)
        for span_start, span_end, span_text in splitter.spans:
            metadata = {"headers": list(headers)}
            chunks.append(TextChunk(span_text, span_start, span_end, len(chunks), metadata))
    return chunks


def _sections(text: str) -> list[tuple[int, int, tuple[str, ...]]]:
    """(start, end, header path) of each section; a section starts at its header line."""
    headers = outline(text).headings
    sections: list[tuple[int, int, tuple[str, ...]]] = []
    first = headers[0].start if headers else len(text)
    if text[:first].strip():
        sections.append((0, first, ()))
    path: list[tuple[int, str]] = []
    pending: int | None = None  # start of header-only sections waiting to join the next one
    for index, heading in enumerate(headers):
        start, level = heading.start, heading.level
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, heading.title))
        end = headers[index + 1].start if index + 1 < len(headers) else len(text)
        body_start = text.find("\n", start, end)
        if index + 1 < len(headers) and (body_start < 0 or not text[body_start:end].strip()):
            pending = start if pending is None else pending
            continue
        sections.append((start if pending is None else pending, end, tuple(title for _, title in path)))
        pending = None
    return sections
