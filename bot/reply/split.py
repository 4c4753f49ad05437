"""Cutting a Markdown answer into message-sized parts: at paragraph, line, sentence or word boundaries, never
inside a character (surrogate pairs, combining marks, joined emoji, flags), code fences closed and reopened."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

Fits = Callable[[str], bool]
"""Whether a part fits in one message (the target's length limit, on its rendered text)."""


def split_reply(text: str, fits: Fits) -> list[str]:
    """`text` (Markdown) cut into message-sized parts, each accepted by `fits`, code fences closed and reopened."""
    return parts_from(text, 0, "", fits)


def utf16_units(text: str) -> int:
    """Length in UTF-16 code units, as Telegram counts it (an emoji is 2); never less than len()."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def message_body(text: str, offset: int, carry: str) -> tuple[str, int]:
    """The Markdown of the message starting at `offset`, and where in `text` its text after `carry` begins."""
    rest = text[offset:]
    if not rest.strip():
        return "", offset
    if carry:
        # Inside a reopened code fence leading spaces are indentation.
        return carry + rest.rstrip(), offset
    stripped = rest.lstrip()
    return stripped.rstrip(), offset + len(rest) - len(stripped)


def parts_from(text: str, offset: int, carry: str, fits: Fits) -> list[str]:
    parts: list[str] = []
    while True:
        body, base = message_body(text, offset, carry)
        if not body:
            return parts
        if fits(body):
            parts.append(body)
            return parts
        cut = cut_at(body, len(carry), fits)
        parts.append(cut.part)
        offset, carry = base + cut.end - len(carry), cut.carry


@dataclass(frozen=True, slots=True)
class _Fence:
    """A code block: cuts at `start` <= i < `end` fall inside it."""

    start: int
    end: int
    marker: str
    info: str


@dataclass(frozen=True, slots=True)
class Cut:
    """One message's part of a body, where the rest starts, and the fence the next message reopens."""

    part: str
    end: int
    carry: str


_FENCE = re.compile(r" {0,3}(?:(`{3,})([^`]*)|(~{3,})(.*))")
_SENTENCE_END = re.compile(r"[.!?…](?=\s)|[。！？]")


def _fences(text: str) -> list[_Fence]:
    fences: list[_Fence] = []
    opening: tuple[int, str, str] | None = None
    at = 0
    for line in text.split("\n"):
        end = at + len(line)
        if match := _FENCE.fullmatch(line):
            marker, info = match.group(1) or match.group(3), (match.group(2) or match.group(4) or "").strip()
            if opening is None:
                opening = (end, marker, info)
            elif marker[0] == opening[1][0] and len(marker) >= len(opening[1]) and not info:
                fences.append(_Fence(opening[0], end, opening[1], opening[2]))
                opening = None
        at = end + 1
    if opening is not None:
        fences.append(_Fence(opening[0], len(text) + 1, opening[1], opening[2]))
    return fences


def cut_at(body: str, lo: int, fits: Fits) -> Cut:
    """Cut `body`, which does not fit, after `lo`: at a paragraph, line, sentence or space, else inside a word."""
    fences = _fences(body)

    def fence_at(at: int) -> _Fence | None:
        return next((fence for fence in fences if fence.start <= at < fence.end), None)

    def make(at: int, skip: int) -> Cut:
        fence = fence_at(at)
        if fence is None:
            return Cut(body[:at].rstrip(), at + skip, "")
        return Cut(f"{body[:at].rstrip(chr(10))}\n{fence.marker}", at + skip, f"{fence.marker}{fence.info}\n")

    top = lo + 1
    low, high = lo + 1, len(body) - 1
    while low <= high:
        middle = (low + high) // 2
        if fits(make(middle, 0).part):
            top, low = middle, middle + 1
        else:
            high = middle - 1
    # Parts shorter than half the room would make many small messages: such boundaries are not used.
    floor = max(lo + 1, lo + (top - lo) // 2)

    def outside(at: int) -> bool:
        return fence_at(at) is None

    def inside(at: int) -> bool:
        return fence_at(at) is not None

    candidates: list[tuple[int | None, int]] = [
        (_last(body, "\n\n", floor, top, outside), 2),
        (_last(body, "\n", floor, top, outside), 1),
        _sentence_end(body, floor, top, outside),
        (_last(body, "\n", floor, top, inside), 1),
        # A word longer than the room is cut anyway, so a short part before it is better than cutting two.
        (_last(body, " ", lo + 1, top, _anywhere), 1),
    ]
    for at, skip in candidates:
        if at is not None and fits((cut := make(at, skip)).part):
            return cut
    return make(_cluster_start(body, top, lo), 0)


def _last(text: str, separator: str, floor: int, top: int, keep: Callable[[int], bool]) -> int | None:
    """The last index in [floor, top] where `separator` starts and `keep` holds."""
    end = top + len(separator)
    while (at := text.rfind(separator, floor, end)) >= 0:
        if keep(at):
            return at
        end = at + len(separator) - 1
    return None


def _anywhere(at: int) -> bool:
    return True


def _sentence_end(text: str, floor: int, top: int, keep: Callable[[int], bool]) -> tuple[int | None, int]:
    ends = [end for match in _SENTENCE_END.finditer(text, floor, top + 1) if (end := match.end()) <= top and keep(end)]
    if not ends:
        return None, 0
    at = ends[-1]
    return at, int(at < len(text) and text[at].isspace())


def _cluster_start(text: str, at: int, lo: int) -> int:
    """`at` moved back to the start of the visible character it falls in, if that stays after `lo`."""
    back = at
    while back > lo + 1 and _joined(text, back):
        back -= 1
    if not _joined(text, back):
        return back
    # One character longer than a message: cut it, but never between the halves of a surrogate pair.
    if _surrogate_pair(text, at):
        return at - 1 if at - 1 > lo else at + 1
    return at


def _surrogate_pair(text: str, at: int) -> bool:
    return 0 < at < len(text) and "\ud800" <= text[at - 1] <= "\udbff" and "\udc00" <= text[at] <= "\udfff"


def _regional(char: str) -> bool:
    return "\U0001f1e6" <= char <= "\U0001f1ff"


def _joined(text: str, at: int) -> bool:
    """Whether a cut between text[at-1] and text[at] would split one visible character (grapheme cluster)."""
    if not 0 < at < len(text):
        return False
    before, after = text[at - 1], text[at]
    if _surrogate_pair(text, at) or before == "\u200d" or (before, after) == ("\r", "\n"):
        return True
    # Combining marks, variation selectors, ZWJ, skin tones and tag characters attach to what precedes them.
    if unicodedata.category(after) in ("Mn", "Mc", "Me") or after == "\u200d":
        return True
    if "\U0001f3fb" <= after <= "\U0001f3ff" or "\U000e0020" <= after <= "\U000e007f":
        return True
    if _regional(before) and _regional(after):
        run = 0
        while at - 1 - run >= 0 and _regional(text[at - 1 - run]):
            run += 1
        return run % 2 == 1
    return False
