"""A table of text cells in monospace: columns padded to their widest cell, wide (CJK) characters counted twice."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

# A column wider than this is cut: a chat shows about 40-80 monospace columns before it wraps a line.
_MAX_CELL = 24


def monospace_table(rows: Sequence[Sequence[str]]) -> str:
    """The rows as aligned lines, a rule under the first (the column names); empty without rows."""
    if not rows:
        return ""
    # A backquote in a cell could close the code block the table is drawn in.
    cells = [[_cut(" ".join(cell.replace("`", "'").split())) for cell in row] for row in rows]
    count = max(len(row) for row in cells)
    cells = [row + [""] * (count - len(row)) for row in cells]
    widths = [max(_width(row[index]) for row in cells) for index in range(count)]
    lines = [_line(row, widths) for row in cells]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def _line(row: Sequence[str], widths: Sequence[int]) -> str:
    return " | ".join(cell + " " * (width - _width(cell)) for cell, width in zip(row, widths, strict=True)).rstrip()


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _cut(text: str) -> str:
    if _width(text) <= _MAX_CELL:
        return text
    kept, width = [], 0
    for char in text:
        width += _width(char)
        if width > _MAX_CELL - 1:
            break
        kept.append(char)
    return "".join(kept) + "…"
