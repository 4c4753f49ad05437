"""Split text into chunks whose offsets point into it: recursive, fixed separator, markdown headers, tokens.

Every splitter returns TextChunks with `chunk.text == text[chunk.start:chunk.end]`, numbered 0..n-1 in
order, stripped of surrounding whitespace, none empty, each within `max_size` as measured by `length`
unless it is one piece that cannot be split further (one character, or one token-heavy character).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.ingest.split.engine import DEFAULT_SEPARATORS, Splitter, check_sizes, to_chunks
from rag.ingest.split.markdown import split_markdown
from rag.ingest.split.tokens import split_tokens, token_length
from rag.ingest.types import LengthFunction, TextChunk

__all__ = [
    "DEFAULT_SEPARATORS",
    "parse_separator",
    "split_fixed",
    "split_markdown",
    "split_recursive",
    "split_tokens",
    "token_length",
]

_ESCAPE = re.compile(r"\\([\\ntr])")
_UNESCAPED = {"\\": "\\", "n": "\n", "t": "\t", "r": "\r"}


def split_recursive(
    text: str,
    *,
    max_size: int,
    overlap: int,
    separators: Sequence[str] = DEFAULT_SEPARATORS,
    length: LengthFunction = len,
) -> list[TextChunk]:
    """Split by the first separator present, merge pieces up to max_size with overlap, recurse into the rest.

    Separators stay at the end of the piece before them, so sentences keep their punctuation. The
    overlap is the previous chunk's last pieces, up to `overlap` long. End `separators` with "" to
    guarantee the size limit: it splits between characters as the last resort.
    """
    check_sizes(max_size, overlap)
    splitter = Splitter(text, max_size, overlap, length)
    splitter.split(0, len(text), tuple(separators))
    return to_chunks(splitter.spans)


def parse_separator(raw: str) -> str:
    r"""A separator as a person typed it: the escapes \n, \t, \r and \\ become the characters they name."""
    return _ESCAPE.sub(lambda match: _UNESCAPED[match.group(1)], raw)


def split_fixed(
    text: str,
    *,
    separator: str,
    max_size: int,
    overlap: int,
    length: LengthFunction = len,
) -> list[TextChunk]:
    """Split on a person's own separator, then merge short pieces up to max_size with overlap.

    Unlike Dify's fixed-separator mode, short pieces are merged (the separators between them stay in
    the chunk, none is left at a chunk's edge), every chunk after the first starts with up to `overlap`
    of the previous chunk's end, cut at the separator or a paragraph, sentence, clause or word boundary,
    and a piece longer than max_size is split recursively by DEFAULT_SEPARATORS (its parts merged and
    overlapped the same way). An empty separator means split_recursive, not single characters.
    """
    check_sizes(max_size, overlap)
    if not separator:
        return split_recursive(text, max_size=max_size, overlap=overlap, length=length)
    # The person's separator is the preferred place for an overlap to begin; characters are not.
    boundaries = tuple(dict.fromkeys((separator, *DEFAULT_SEPARATORS[:-1])))
    splitter = Splitter(text, max_size, overlap, length, boundaries)
    run: list[tuple[int, int, int]] = []  # consecutive pieces that fit, to merge
    start = 0
    for part in text.split(separator):
        end = start + len(part)
        if part and not part.isspace():
            size = length(part)
            if size <= max_size:
                run.append((start, end, size))
            else:
                splitter.fill(run)
                run = []
                splitter.split(start, end, DEFAULT_SEPARATORS)
        start = end + len(separator)
    splitter.fill(run)
    return to_chunks(splitter.spans)
