"""Token windows with tiktoken, mapped back to character offsets, and a cached token length for the splitters."""

from __future__ import annotations

from functools import lru_cache
from itertools import accumulate

import tiktoken

from rag.ingest.split.engine import Span, add_span, check_sizes, to_chunks
from rag.ingest.types import LengthFunction, TextChunk

# Only short texts are cached: they are the ones measured again (single characters at the last
# splitting level, repeated lines, a piece re-measured whole after its parts), and the bound keeps
# the cache at a few MB: at most _CACHE_SIZE texts of at most _CACHED_CHARS characters.
_CACHE_SIZE = 2048
_CACHED_CHARS = 1024


def token_length(encoding: tiktoken.Encoding) -> LengthFunction:
    """A LengthFunction counting `encoding` tokens (special tokens count as plain text), caching short texts."""
    encode = encoding.encode_ordinary

    @lru_cache(maxsize=_CACHE_SIZE)
    def cached(text: str) -> int:
        return len(encode(text))

    def length(text: str) -> int:
        return cached(text) if len(text) <= _CACHED_CHARS else len(encode(text))

    return length


def split_tokens(text: str, *, max_tokens: int, overlap_tokens: int, encoding: tiktoken.Encoding) -> list[TextChunk]:
    """Windows of max_tokens tokens, each starting overlap_tokens before the previous one ended.

    A window edge inside a multi-byte character (common in Chinese) moves out to the character's edge,
    so no chunk cuts a character (nor holds U+FFFD): such a chunk also holds the character's other
    part-tokens, and the character is in both neighbouring chunks. Chunks are stripped of surrounding
    whitespace. Raises ValueError for text holding UTF-16 surrogate pairs, which tiktoken re-encodes.
    """
    check_sizes(max_tokens, overlap_tokens, size_name="max_tokens", overlap_name="overlap_tokens")
    tokens = encoding.encode_ordinary(text)
    if not tokens:
        return []
    token_bytes = encoding.decode_tokens_bytes(tokens)
    data = b"".join(token_bytes)
    if len(data.decode("utf-8")) != len(text):
        # tiktoken re-encodes a surrogate pair as one character: offsets could not point into `text`.
        raise ValueError("text holds UTF-16 surrogate pairs: decode it properly before splitting by tokens")
    ends = list(accumulate(map(len, token_bytes)))  # byte offset where each token ends
    count, step = len(tokens), max_tokens - overlap_tokens
    windows: list[tuple[int, int]] = []  # byte offsets, widened to character boundaries
    for first in range(0, count, step):
        last = min(first + max_tokens, count)
        windows.append((_char_floor(data, ends[first - 1] if first else 0), _char_ceil(data, ends[last - 1])))
        if last == count:
            break
    offsets = _char_offsets(data, {offset for window in windows for offset in window})
    spans: list[Span] = []
    for start_byte, end_byte in windows:
        add_span(spans, _strip(text, offsets[start_byte], offsets[end_byte]))
    return to_chunks(spans)


def _char_floor(data: bytes, offset: int) -> int:
    while offset < len(data) and data[offset] & 0xC0 == 0x80:  # a UTF-8 continuation byte
        offset -= 1
    return offset


def _char_ceil(data: bytes, offset: int) -> int:
    while offset < len(data) and data[offset] & 0xC0 == 0x80:
        offset += 1
    return offset


def _char_offsets(data: bytes, byte_offsets: set[int]) -> dict[int, int]:
    """Character index of each byte offset (all on character boundaries), decoding each stretch once."""
    result: dict[int, int] = {}
    chars = previous = 0
    for offset in sorted(byte_offsets):
        chars += len(data[previous:offset].decode("utf-8"))
        result[offset] = chars
        previous = offset
    return result


def _strip(text: str, start: int, end: int) -> Span:
    chunk = text[start:end]
    left = chunk.lstrip()
    start += len(chunk) - len(left)
    stripped = left.rstrip()
    return start, start + len(stripped), stripped
