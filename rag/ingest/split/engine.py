"""The splitting engine: separator pieces as offsets, merged into chunk spans of the input text."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from functools import cache
from itertools import accumulate

from rag.ingest.types import LengthFunction, TextChunk

# Paragraphs, lines, then sentence ends (Chinese full-width, then English with their space), clause
# marks, words, and characters as the last resort. Each stays at the end of the piece before it.
DEFAULT_SEPARATORS: tuple[str, ...] = ("\n\n", "\n", "。", "！", "？", ". ", "! ", "? ", "；", "，", " ", "")

# A run of pieces whose summed length is at most this much over the limit is measured whole before
# it is split: for token lengths the sum of the pieces over-counts (" " + "Next" is two tokens apart,
# one together: about 4% on English prose), so such a run may fit. Only runs this close pay for the
# extra measurement.
_REMEASURE_MARGIN = 1.1

Span = tuple[int, int, str]


def check_sizes(max_size: int, overlap: int, *, size_name: str = "max_size", overlap_name: str = "overlap") -> None:
    """Raise ValueError unless max_size >= 1 and 0 <= overlap < max_size."""
    if max_size < 1:
        raise ValueError(f"{size_name} must be at least 1, got {max_size}")
    if not 0 <= overlap < max_size:
        raise ValueError(f"{overlap_name} must be at least 0 and less than {size_name} ({max_size}), got {overlap}")


def trim(text: str, start: int, end: int) -> Span:
    """text[start:end] without surrounding whitespace or a leading sentence terminator, with its offsets."""
    chunk = text[start:end]
    left = chunk.lstrip()
    start += len(chunk) - len(left)
    stripped = left.rstrip()
    if stripped and stripped[0] in ".。":
        # A terminator that landed at the start belongs to the sentence before (Dify strips it too).
        # "." before a letter or digit is kept: ".NET", ".5", "...and" are words, not sentence ends.
        rest = stripped.lstrip(".。")
        if stripped[0] == "。" or not rest[:1].isalnum():
            rest = rest.lstrip()
            start += len(stripped) - len(rest)
            stripped = rest
    return start, start + len(stripped), stripped


def add_span(spans: list[Span], span: Span) -> None:
    """Append a trimmed span, keeping starts strictly increasing and never keeping a span inside another."""
    start, end, text = span
    if not text:
        return
    if spans:
        if end <= spans[-1][1]:
            return  # nothing new: only whitespace or a stripped terminator lies outside the last span
        while spans and start <= spans[-1][0]:
            spans.pop()  # the last span is a prefix of this one (they differed only by stripped text)
    spans.append(span)


def to_chunks(spans: Sequence[Span]) -> list[TextChunk]:
    """TextChunks from spans, numbered in order."""
    return [TextChunk(text, start, end, position) for position, (start, end, text) in enumerate(spans)]


@cache
def _overlaps(separator: str) -> tuple[str, ...]:
    """The strings in which two occurrences of separator overlap ("\n\n\n" for "\n\n"): where none occurs,
    every occurrence ends a piece, as str.split would cut."""
    return tuple(separator[:k] + separator for k in range(1, len(separator)) if separator[k:] == separator[:-k])


def choose(text: str, start: int, end: int, separators: Sequence[str]) -> int:
    """Index of the first separator found in text[start:end] ("" always matches), or len(separators)."""
    for index, separator in enumerate(separators):
        if not separator or text.find(separator, start, end) >= 0:
            return index
    return len(separators)


class Splitter:
    """Langchain's recursive algorithm on offsets: split by the first separator present, merge the pieces
    that fit with overlap, split the ones that do not by the following separators.

    Chunks accumulate in `spans` in text order. With `boundaries` empty the overlap is langchain's: the
    previous chunk's last whole pieces. Otherwise runs of pieces go through fill(), whose overlap is the
    previous chunk's tail cut at one of `boundaries` (split_fixed).
    """

    __slots__ = ("boundaries", "exact", "length", "max_size", "overlap", "spans", "text")

    def __init__(
        self, text: str, max_size: int, overlap: int, length: LengthFunction, boundaries: Sequence[str] = ()
    ) -> None:
        self.text = text
        self.max_size = max_size
        self.overlap = overlap
        self.length = length
        # With len the size of a span is end - start and the pieces add up exactly; any other length
        # (tokens) is re-measured on the chunk itself, because lengths of pieces do not add up.
        self.exact = length is not len
        self.spans: list[Span] = []
        # Empty: langchain's overlap, the last whole pieces of the previous chunk in its merge run.
        # Otherwise: fill(), whose overlap is the previous chunk's tail cut at one of these separators.
        self.boundaries = tuple(boundaries)

    def split(self, start: int, end: int, separators: Sequence[str], *, too_long: bool = False) -> None:
        """Add the chunks of text[start:end] to self.spans; `too_long`: it was measured whole, over max_size."""
        text, max_size = self.text, self.max_size
        if not self.exact and end - start <= max_size:
            add_span(self.spans, trim(text, start, end))
            return
        index = choose(text, start, end, separators)
        if index == len(separators):  # no separator occurs: one unsplittable piece
            add_span(self.spans, trim(text, start, end))
            return
        separator = separators[index]
        if not separator:
            self._split_characters(start, end)
            return
        if not self.exact and not self.boundaries and not _overlaps(separator):
            self._scan(start, end, separator, separators[index + 1 :])
            return
        parts = text[start:end].split(separator)
        if self.exact:
            strings = [part + separator for part in parts]
            strings[-1] = parts[-1]
            if not strings[-1]:
                strings.pop()  # the text ended with the separator
            widths = list(map(len, strings))
            lengths = list(map(self.length, strings))
        else:
            step = len(separator)
            lengths = widths = [len(part) + step for part in parts]
            widths[-1] -= step
            if not widths[-1]:
                widths.pop()
        bounds = list(accumulate(widths, initial=start))
        if max(lengths) <= max_size:
            self._merge_run(bounds, lengths, too_long=too_long)
            return
        rest = separators[index + 1 :]
        run = 0
        for k, size in enumerate(lengths):
            if size > max_size:
                if run < k:
                    self._merge_run(bounds[run : k + 1], lengths[run:k])
                if rest:
                    self.split(bounds[k], bounds[k + 1], rest, too_long=True)
                else:
                    add_span(self.spans, trim(text, bounds[k], bounds[k + 1]))
                run = k + 1
        if run < len(lengths):
            self._merge_run(bounds[run:], lengths[run:])

    def _scan(self, start: int, end: int, separator: str, rest: Sequence[str]) -> None:
        """split() and _merge_pieces() in one pass, where length is len and no two occurrences of separator
        overlap (so every occurrence ends a piece, as str.split cuts): each chunk's end is the last piece
        boundary within reach, found with rfind, so the cost is per chunk rather than per piece."""
        text, spans, max_size, overlap = self.text, self.spans, self.max_size, self.overlap
        width = len(separator)
        i = start  # a piece boundary: where the next chunk starts
        found = text.find(separator, i, end)
        piece_end = end if found < 0 else found + width  # the end of the piece starting at i
        while True:
            if piece_end - i > max_size:  # a long piece: split by the next separators, no overlap around it
                if rest:
                    self.split(i, piece_end, rest)
                else:
                    add_span(spans, trim(text, i, piece_end))
                if piece_end >= end:
                    return
                i = piece_end
                found = text.find(separator, i, end)
                piece_end = end if found < 0 else found + width
                continue
            # The chunk: every piece from i that fits, so up to the last boundary within max_size.
            limit = i + max_size
            j = end if limit >= end else text.rfind(separator, i, limit) + width
            chunk = text[i:j]
            stripped = chunk.strip()
            if stripped and stripped[0] not in ".。":  # trim() and add_span() inline for the common case
                a = i + chunk.index(stripped[0]) if chunk[0] != stripped[0] else i
                span = (a, a + len(stripped), stripped)
                if not spans or (a > spans[-1][0] and span[1] > spans[-1][1]):
                    spans.append(span)
                else:
                    add_span(spans, span)
            else:
                add_span(spans, trim(text, i, j))
            if j >= end:
                return
            found = text.find(separator, j, end)
            piece_end = end if found < 0 else found + width
            if piece_end - j > max_size:
                i = j  # a long piece is next: this run of pieces ends without overlap
                continue
            # The next chunk starts at the first boundary leaving at most `overlap` of this chunk and
            # room for the next piece (langchain drops whole pieces from the front until both hold).
            found = text.find(separator, max(i, j - overlap - width, piece_end - max_size - width), j)
            if found >= 0:
                # The first piece from i ends at j at the latest, inside this chunk: it fits.
                i, piece_end = found + width, j
            else:
                i = j

    def _merge_run(self, bounds: list[int], lengths: list[int], *, too_long: bool = False) -> None:
        """Merge a run of pieces that each fit (piece k is bounds[k]:bounds[k+1])."""
        if self.boundaries:
            self.fill(list(zip(bounds, bounds[1:], lengths, strict=False)))
        elif self.exact:
            self._merge_pieces(bounds, lengths, too_long=too_long)
        else:
            self._merge_characters(bounds)

    def _split_characters(self, start: int, end: int) -> None:
        """The last resort: pieces of one character each, merged like any others."""
        if self.exact:
            length = self.length
            self._merge_pieces(list(range(start, end + 1)), [length(c) for c in self.text[start:end]])
            return
        # With len, merging single characters gives windows of max_size stepping by max_size - overlap.
        step = self.max_size - self.overlap
        for a in range(start, end, step):
            b = min(a + self.max_size, end)
            add_span(self.spans, trim(self.text, a, b))
            if b == end:
                break

    def _merge_pieces(self, bounds: list[int], lengths: list[int], *, too_long: bool = False) -> None:
        """Merge consecutive pieces (piece k is bounds[k]:bounds[k+1]) into chunks of at most max_size,
        each starting with the previous chunk's last pieces up to `overlap` (langchain's _merge_splits)."""
        max_size, overlap = self.max_size, self.overlap
        if not self.exact:
            self._merge_characters(bounds)
            return
        count = len(lengths)
        total = sum(lengths)
        if (
            not too_long
            and max_size < total <= max_size * _REMEASURE_MARGIN
            and self.length(self.text[bounds[0] : bounds[-1]]) <= max_size
        ):
            first, last, span = self._fit(bounds, 0, count, 0)
            if first == 0 and last == count:
                add_span(self.spans, span)
                return
        i = j = total = done = 0  # window i..j-1; pieces before `done` are in an emitted chunk
        while True:
            if j < count:
                size = lengths[j]
                if j == i or total + size <= max_size:
                    total += size
                    j += 1
                    continue
            i, k, span = self._fit(bounds, i, j, done)
            total = sum(lengths[i:k])
            add_span(self.spans, span)
            if k >= count:
                return
            done = j = k
            size = lengths[j]
            while i < j and (total > overlap or total + size > max_size):
                total -= lengths[i]
                i += 1

    def _merge_characters(self, bounds: list[int]) -> None:
        """_merge_pieces() where length is len: piece lengths are differences of bounds, so each chunk's
        end and the next chunk's start are found by bisection instead of a step per piece."""
        text, spans, max_size, overlap = self.text, self.spans, self.max_size, self.overlap
        last = len(bounds) - 1
        i = 0
        while True:
            # The most pieces from i that fit (at least one); then drop pieces from the front until what
            # is left is within overlap and leaves room for the next piece (langchain's loop, solved).
            j = bisect_right(bounds, bounds[i] + max_size, i + 1) - 1
            if j <= i:
                j = i + 1
            start, end = bounds[i], bounds[j]
            # trim() and add_span() inline for the common case: only spaces to strip, a new last span.
            chunk = text[start:end]
            stripped = chunk.strip()
            if stripped and stripped[0] not in ".。":
                if chunk[0] != stripped[0]:
                    start += chunk.index(stripped[0])
                span = (start, start + len(stripped), stripped)
                if not spans or (start > spans[-1][0] and span[1] > spans[-1][1]):
                    spans.append(span)
                else:
                    add_span(spans, span)
            else:
                add_span(spans, trim(text, start, end))
            if j >= last:
                return
            i = bisect_left(bounds, max(bounds[j] - overlap, bounds[j + 1] - max_size), i)
            if i > j:
                i = j

    def _fit(self, bounds: list[int], i: int, j: int, done: int) -> tuple[int, int, Span]:
        """The chunk of pieces i..j-1 measured whole: while over the limit, give back pieces at the end
        (keeping at least one new piece), then overlap pieces at the start."""
        text, length, max_size = self.text, self.length, self.max_size
        floor = max(i, done) + 1
        span = trim(text, bounds[i], bounds[j])
        while span[2] and length(span[2]) > max_size:
            if j > floor:
                j -= 1
            elif i < j - 1:
                i += 1
            else:
                break  # a single piece: unsplittable here
            span = trim(text, bounds[i], bounds[j])
        return i, j, span

    def fill(self, units: list[tuple[int, int, int]]) -> None:
        """Pack units (start, end, length) into chunks: the previous chunk's tail first, then whole units.

        Units need not touch: what lies between two (a fixed separator) is in the chunk and counted.
        """
        text, length, max_size, exact, spans = self.text, self.length, self.max_size, self.exact, self.spans
        count = len(units)
        u = 0
        while u < count:
            first_start, first_end, first_size = units[u]
            start, size = first_start, first_size
            if self.overlap and spans:
                start, size = self._overlap_start(spans[-1], units[u])
            v, end = u + 1, first_end
            while v < count:
                a, b, unit_size = units[v]
                # With exact lengths an estimate, the sum of the parts: the chunk is measured whole below.
                grown = size + unit_size + (length(text[end:a]) if a > end else 0) if exact else b - start
                if grown > max_size:
                    break
                size, end, v = grown, b, v + 1
            span = trim(text, start, end)
            if exact:
                span, v = self._shrink(span, units, u, v, start)
            add_span(spans, span)
            u = v

    def _shrink(self, span: Span, units: list[tuple[int, int, int]], u: int, v: int, start: int) -> tuple[Span, int]:
        """Measured whole, a chunk of units u..v-1 may be over the limit: give back units, then the overlap."""
        text, length, max_size = self.text, self.length, self.max_size
        while span[2] and length(span[2]) > max_size:
            if v > u + 1:
                v -= 1
            elif start < units[u][0]:
                start = units[u][0]
            else:
                break  # one unit: unsplittable here
            span = trim(text, start, units[v - 1][1])
        return span, v

    def _overlap_start(self, previous: Span, first: tuple[int, int, int]) -> tuple[int, int]:
        """Where the chunk beginning with unit `first` starts so that it repeats the end of `previous`, and
        its estimated length to the end of `first`: the longest tail within overlap, cut at the coarsest
        boundary level (self.boundaries) that gives one with room left for `first`."""
        text, length, exact = self.text, self.length, self.exact
        overlap, max_size = self.overlap, self.max_size
        previous_start, previous_end, _ = previous
        first_start, first_end, first_size = first
        for separator in self.boundaries:
            if not exact:
                lowest = max(previous_end - overlap, first_end - max_size)  # tail within overlap, room for first
                found = text.find(separator, max(previous_start, lowest - len(separator)), previous_end)
                if found >= 0 and found + len(separator) < previous_end:
                    start = found + len(separator)
                    return start, first_end - start
                continue
            candidates = []  # boundaries whose tail is within overlap, nearest the end first
            found = text.rfind(separator, previous_start, previous_end)
            while found >= 0:
                start = found + len(separator)
                if start < previous_end:
                    if length(text[start:previous_end]) > overlap:
                        break
                    candidates.append(start)
                found = text.rfind(separator, previous_start, found + len(separator) - 1)
            for start in reversed(candidates):
                size = length(text[start:first_start]) + first_size
                if size <= max_size:
                    return start, size
        return first_start, first_size
