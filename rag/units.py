"""A passage cut into quotable units (sentences, list items, code blocks, table rows), each with its context.

Pure functions, no I/O. A heading is not a unit but the context of the units under it: Markdown heading lines, a
heading path opening the passage ("Handbook > Leave"), and a short title-like line that opens a paragraph (a docx
heading flattened to text). A table row is a unit of its own that carries its table's header row, so that it can be
quoted as a row under its header and matched by the header's words too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

# Ending a unit: ASCII . ! ? and … before whitespace or the end (so 3.5 and e.g.x stay whole), full-width
# 。！？ anywhere; closing quotes and brackets after a stop stay with its sentence.
_CLOSERS: Final = "\u201d\u2019\"')\\]）】」』"
_STOP: Final = re.compile(rf"(?:[.!?…]+(?=[{_CLOSERS}]*(?:\s|$))|[。！？]+)[{_CLOSERS}]*")
# Abbreviations whose full stop does not end a sentence (lower-cased, without the stop).
_ABBREVIATIONS: Final = frozenset(
    {"e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "prof", "no", "fig", "cf", "approx"}
)
_LIST_ITEM: Final = re.compile(r"^\s*(?:(?:[-*+•·]|\d{1,3}[.)]|[a-zA-Z][.)])\s+|\d{1,3}、)")
_QUOTE_LINE: Final = re.compile(r"^\s*>")
_HEADING: Final = re.compile(r"^\s*#{1,6}\s+(.*?)\s*#*\s*$")
_FENCE: Final = re.compile(r"^\s*(```|~~~)")
_HAN: Final = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
# A heading path opening a passage, as chunkers write the headings above a chunk: "Handbook > Leave > Vacation".
_PATH_SEPARATOR: Final = re.compile(r"\s+[>\u203a\u00bb]\s+")
# A table's rule row ("| --- | :-: |", "---|---").
_RULE_ROW: Final = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
# A short line that opens a paragraph and ends without punctuation reads as a heading (a docx heading flattened):
# at most this many words, or Chinese characters.
_TITLE_WORDS: Final = 6
_TITLE_CHARS: Final = 50
_TITLE_HAN: Final = 20
_LINE_END_MARKS: Final = ".,;:!?…。，；：！？、-\u2013\u2014([{（【「"


@dataclass(frozen=True, slots=True)
class Unit:
    """One quotable piece of a passage: a sentence, a list item, a fenced code block or a table row.

    `heading` is the heading it stands under (plain text, "" for none; an FAQ's answer stands under its question,
    and `faq` is set); a table row's `header` is its table's header row ("" for none) and `table` the table's number
    within the passage (-1 for anything but a row).
    """

    passage: int
    index: int
    text: str
    starts_line: bool = False
    code: bool = False
    heading: str = ""
    header: str = ""
    table: int = -1
    faq: bool = False

    @property
    def row(self) -> bool:
        """Whether this unit is a table row."""
        return self.table >= 0


def table_cells(line: str) -> list[str]:
    """The cells of a table row written with or without outer pipes (an escaped \\| stays in its cell)."""
    body = line.strip()
    body = body.removeprefix("|")
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", body)]


def table_row(cells: Sequence[str]) -> str:
    """Cells as one Markdown table row."""
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _is_row(line: str) -> bool:
    return len(table_cells(line)) >= 2 and not _FENCE.match(line)


def _title_like(line: str, following: str, text_after: str) -> bool:
    """A short line without closing punctuation that opens a paragraph, followed by a new sentence (`following` is
    the next line, `text_after` the next non-blank one)."""
    text = line.strip()
    if not text or not text_after.strip() or _LIST_ITEM.match(text) or text[-1] in _LINE_END_MARKS:
        return False
    if "|" in text or text.startswith(("`", ">", "<", "!", "[")):
        return False
    if _HAN.match(text[:1]):  # Chinese wraps anywhere: only a line set apart by a blank line is a heading
        return len(text) <= _TITLE_HAN and not following.strip()
    following = text_after
    start = following.strip()[:1]
    if not (start.isupper() or start.isdigit() or _HAN.match(start) or start in "\"'\u201c\u2018(`*|"):
        return False  # the line wraps into the rest of a sentence
    return len(text) <= _TITLE_CHARS and len(text.split()) <= _TITLE_WORDS and not text[:1].islower()


def _heading_path(line: str) -> str | None:
    """The heading path a passage opens with ("Handbook > Leave"), as its own text; None when it is not one."""
    parts = _PATH_SEPARATOR.split(line.strip())
    if len(parts) < 2 or any(not part or len(part) > _TITLE_CHARS for part in parts):
        return None
    return None if line.rstrip()[-1:] in _LINE_END_MARKS else " > ".join(parts)


def split_units(text: str, passage: int = 0, heading: str = "") -> list[Unit]:
    """`text` cut into sentences (Chinese and English stops), list items, whole fenced code blocks and table rows,
    each under the heading it follows (`heading` before any)."""
    pieces: list[tuple[str, bool, bool, str, str, int]] = []  # text, starts a line, code, heading, header, table
    lines = text.replace("\r\n", "\n").split("\n")
    paragraph: list[str] = []
    tables = 0

    def flush() -> None:
        if paragraph and _LIST_ITEM.match(paragraph[0]):
            pieces.append((_join_lines(paragraph), True, False, heading, "", -1))  # a list item is quoted whole
        elif paragraph:
            for first, sentence in _sentences(_join_lines(paragraph)):
                pieces.append((sentence, first, False, heading, "", -1))
        paragraph.clear()

    at = 0
    first_line = next((n for n, line in enumerate(lines) if line.strip()), len(lines))
    if first_line < len(lines) and (path := _heading_path(lines[first_line])) is not None:
        heading, at = path, first_line + 1
    while at < len(lines):
        line = lines[at]
        following = lines[at + 1] if at + 1 < len(lines) else ""
        fence = _FENCE.match(line)
        if fence:
            flush()
            end = next((n for n in range(at + 1, len(lines)) if lines[n].strip().startswith(fence.group(1))), None)
            block = lines[at : (end if end is not None else len(lines) - 1) + 1]
            pieces.append(("\n".join(block).strip("\n"), True, True, heading, "", -1))
            at = (end if end is not None else len(lines)) + 1
            continue
        if match := _HEADING.match(line):
            flush()
            heading = match.group(1).strip() or heading
        elif _is_row(line) and (line.strip().startswith("|") or _is_row(following) or _RULE_ROW.match(following)):
            flush()
            at = _table(lines, at, heading, tables, pieces)
            tables += 1
            continue
        elif not line.strip():
            flush()
        elif not paragraph and _title_like(line, following, next((n for n in lines[at + 1 :] if n.strip()), "")):
            heading = line.strip()
        elif _LIST_ITEM.match(line) or _QUOTE_LINE.match(line):
            flush()
            paragraph.append(line.strip())
            if _QUOTE_LINE.match(line):
                flush()
        else:
            paragraph.append(line.strip())
        at += 1
    flush()
    return [
        Unit(passage, index, piece, starts_line, code, under, header, table)
        for index, (piece, starts_line, code, under, header, table) in enumerate(p for p in pieces if p[0].strip())
    ]


def _table(
    lines: Sequence[str], at: int, heading: str, number: int, pieces: list[tuple[str, bool, bool, str, str, int]]
) -> int:
    """The table starting at `lines[at]` as one piece per body row, each carrying the header row; the index of the
    first line after it. Without a rule row under the first row, every row is a body row (no header is known)."""
    end = at
    while end < len(lines) and (_is_row(lines[end]) or _RULE_ROW.match(lines[end])) and lines[end].strip():
        end += 1
    rows = [line for line in lines[at:end] if not _RULE_ROW.match(line)]
    has_header = at + 1 < end and _RULE_ROW.match(lines[at + 1]) is not None
    header = table_row(table_cells(rows[0])) if has_header else ""
    for line in rows[1:] if has_header else rows:
        pieces.append((table_row(table_cells(line)), True, False, heading, header, number))
    return end


def _join_lines(lines: Sequence[str]) -> str:
    """Soft-wrapped lines as one paragraph: Chinese joins without a space, other text with one."""
    joined = lines[0]
    for line in lines[1:]:
        joined += ("" if _HAN.match(joined[-1:]) or _HAN.match(line[:1]) else " ") + line
    return joined


def _sentences(paragraph: str) -> list[tuple[bool, str]]:
    """The paragraph's sentences, the first flagged as starting a line."""
    found: list[str] = []
    start = 0
    for stop in _STOP.finditer(paragraph):
        if stop.group().startswith(".") and _abbreviated(paragraph[start : stop.start()]):
            continue
        found.append(paragraph[start : stop.end()].strip())
        start = stop.end()
    found.append(paragraph[start:].strip())
    return [(n == 0, sentence) for n, sentence in enumerate(s for s in found if s)]


def _abbreviated(head: str) -> bool:
    words = head.split()
    last = words[-1].lower() if words else ""
    return last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha())
