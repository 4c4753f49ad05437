"""Structure-following splitting, the default: a chunk per heading section and page, tables cut between rows.

Headings are Markdown ATX lines outside code fences; the HTML and Word extractors write their headings (h1-h6,
Heading 1..n) as such lines, and their tables as one ' | ' line per row. A section is findable on its own: it is
one chunk whenever it fits max_size, however small the whole document is, and no chunk spans two sections or two
extracted parts (PDF pages, slides, sheets). A longer section is cut recursively (paragraphs, lines, sentences),
except that its tables are cut between rows. Every chunk keeps the text-span contract of the other splitters
(`chunk.text == text[chunk.start:chunk.end]`); what it lacks as context travels in its metadata:

- `heading_path`: the titles of its section and the sections above it, e.g. ["Employee handbook", "Expenses"];
  absent before the first heading.
- `table_header`: a table's header row(s), on each chunk of that table's rows that does not begin with them.

`indexed_text` puts that context in front of the chunk's text for embedding and BM25.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Final

from rag.ingest.split.engine import DEFAULT_SEPARATORS, Splitter, check_sizes, trim
from rag.ingest.split.markdown import Heading, outline
from rag.ingest.types import LengthFunction, TextChunk

HEADING_PATH: Final = "heading_path"
TABLE_HEADER: Final = "table_header"
PATH_SEPARATOR: Final = " > "

# A table is at least two consecutive lines holding a "|": Markdown tables, and the rows the HTML, Word, CSV and
# spreadsheet extractors write. A Markdown delimiter row (|---|:--:|) makes the two lines above it the header.
_MIN_TABLE_ROWS = 2
_DELIMITER_ROW = re.compile(r"\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*")
# CSV and spreadsheet rows name their columns in every cell ("name: Ann | team: Ops"): no header to repeat.
_KEYED_CELL = re.compile(r"\s*[^:|]+: ")
# A header is repeated on every chunk of its table's rows only while it takes at most this share of max_size:
# the rows must keep most of the room.
_MAX_HEADER_SHARE = 0.5
_LEADING_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t][^\n]*)?(?:\n|$)")


@dataclass(frozen=True, slots=True)
class _Section:
    """text[start:end] under `path`; the section's own heading line ends at `heading_end` (start: none in it)."""

    start: int
    end: int
    path: tuple[str, ...]
    heading_end: int


def split_structure(
    text: str,
    *,
    max_size: int,
    overlap: int,
    length: LengthFunction = len,
    boundaries: Sequence[int] = (),
) -> list[TextChunk]:
    """Chunks that follow the text's headings, `boundaries` (offsets where a page or sheet starts) and tables.

    A heading with no text under it is no chunk: its title stays in the path of the sections nested in it and
    is otherwise dropped. A text of headings alone is split recursively as plain text. The overlap applies
    only inside a section cut into several chunks, never across sections nor between a table's rows.
    """
    check_sizes(max_size, overlap)
    shape = outline(text)
    spans: list[tuple[int, int, str, dict[str, Any]]] = []
    for section in _sections(text, shape.headings, boundaries):
        spans.extend(_section_spans(text, section, shape.fences, max_size, overlap, length))
    if not spans and text.strip():
        splitter = Splitter(text, max_size, overlap, length)
        for start, end in pairwise([0, *_cuts(text, boundaries), len(text)]):
            splitter.split(start, end, DEFAULT_SEPARATORS)
        spans = [(*span, {}) for span in splitter.spans]
    return [TextChunk(span, start, end, position, meta) for position, (start, end, span, meta) in enumerate(spans)]


def indexed_text(text: str, metadata: Mapping[str, Any]) -> str:
    """What a chunk is embedded and BM25-indexed by: its heading path on the first line ("Handbook > Expenses"),
    its table's header rows when the chunk lacks them, then its text without its own heading line (the path's
    last title says it already). A chunk without that metadata is indexed by its text alone."""
    path = metadata.get(HEADING_PATH)
    header = metadata.get(TABLE_HEADER)
    if not path and not header:
        return text
    lines: list[str] = []
    if isinstance(path, list | tuple) and path:
        lines.append(PATH_SEPARATOR.join(str(title) for title in path))
        heading = _LEADING_HEADING.match(text)
        if heading is not None:
            text = text[heading.end() :].lstrip()
    if isinstance(header, str) and header:
        lines.append(header)
    if text.strip():
        lines.append(text)
    return "\n".join(lines)


def _sections(text: str, headings: Sequence[Heading], boundaries: Sequence[int]) -> list[_Section]:
    """Each heading's section (its line to the next heading), and the text before the first, cut at boundaries."""
    whole: list[_Section] = []
    first = headings[0].start if headings else len(text)
    if text[:first].strip():
        whole.append(_Section(0, first, (), 0))
    stack: list[Heading] = []
    for index, heading in enumerate(headings):
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
        end = headings[index + 1].start if index + 1 < len(headings) else len(text)
        if text[heading.end : end].strip():
            whole.append(_Section(heading.start, end, tuple(h.title for h in stack), heading.end))
    cuts = _cuts(text, boundaries)
    sections: list[_Section] = []
    for section in whole:
        # A part after a page cut starts without the heading line: its heading_end is its own start.
        inside = cuts[bisect_right(cuts, section.start) : bisect_left(cuts, section.end)]
        for start, end in pairwise([section.start, *inside, section.end]):
            heading_end = section.heading_end if start == section.start else start
            sections.append(_Section(start, end, section.path, heading_end))
    return sections


def _cuts(text: str, boundaries: Sequence[int]) -> list[int]:
    return sorted(offset for offset in set(boundaries) if 0 < offset < len(text))


def _section_spans(
    text: str,
    section: _Section,
    fences: Sequence[tuple[int, int]],
    max_size: int,
    overlap: int,
    length: LengthFunction,
) -> list[tuple[int, int, str, dict[str, Any]]]:
    """The section whole when it fits, else its text runs split recursively and its tables between rows."""
    context: dict[str, Any] = {HEADING_PATH: list(section.path)} if section.path else {}
    start, end, whole = trim(text, section.start, section.end)
    if not whole or end <= section.heading_end:
        return []
    if (end - start if length is len else length(whole)) <= max_size:
        return [(start, end, whole, context)]
    spans: list[tuple[int, int, str, dict[str, Any]]] = []
    for run_start, run_end, header_end in _runs(text, section.start, section.end, fences):
        header = text[run_start:header_end].strip() if header_end > run_start else ""
        header_size = length(header) if header else 0
        repeat = bool(header) and header_size <= max_size * _MAX_HEADER_SHARE
        table = header_end >= run_start  # a text run has header_end -1
        splitter = Splitter(text, max_size - header_size if repeat else max_size, 0 if table else overlap, length)
        splitter.split(run_start, run_end, DEFAULT_SEPARATORS)
        for span_start, span_end, span_text in splitter.spans:
            if span_end <= section.heading_end:
                continue  # the heading line alone: its title is in every chunk's path
            meta = dict(context)
            if repeat and span_start >= header_end:
                meta[TABLE_HEADER] = header
            spans.append((span_start, span_end, span_text, meta))
    return spans


def _runs(text: str, start: int, end: int, fences: Sequence[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """text[start:end] as runs (run_start, run_end, header_end): tables with header_end where their header rows
    end (run_start when they have none to repeat), and the text between them with header_end -1."""
    lines: list[tuple[int, int]] = []
    offset = start
    for line in text[start:end].split("\n"):
        lines.append((offset, offset + len(line)))
        offset += len(line) + 1
    tables: list[tuple[int, int]] = []  # line index ranges [first, last)
    first = None
    for index, (a, b) in enumerate([*lines, (end, end)]):
        row = b > a and "|" in text[a:b] and not any(f_start <= a < f_end for f_start, f_end in fences)
        if row and first is None:
            first = index
        elif not row and first is not None:
            if index - first >= _MIN_TABLE_ROWS:
                tables.append((first, index))
            first = None
    runs: list[tuple[int, int, int]] = []
    position = start
    for first_row, last_row in tables:
        table_start, table_end = lines[first_row][0], lines[last_row - 1][1]
        if table_start > position:
            runs.append((position, table_start, -1))
        runs.append((table_start, table_end, _header_end(text, lines[first_row:last_row])))
        position = table_end
    if position < end:
        runs.append((position, end, -1))
    return runs


def _header_end(text: str, rows: Sequence[tuple[int, int]]) -> int:
    """Where a table's header rows end: after a Markdown delimiter row, after the first row of an HTML or Word
    table, and at the table's start for rows that name their columns in every cell."""
    (first_start, first_end), (second_start, second_end) = rows[0], rows[1]
    if _DELIMITER_ROW.fullmatch(text[second_start:second_end]):
        return second_end
    if all(_KEYED_CELL.match(cell) for cell in text[first_start:first_end].split("|") if cell.strip()):
        return first_start
    return first_end
