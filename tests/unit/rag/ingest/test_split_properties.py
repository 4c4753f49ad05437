"""Properties every splitter keeps on generated English, Chinese and mixed text, in characters and tokens."""

from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate, pairwise
from pathlib import Path

import pytest
import tiktoken
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rag.ingest.split.markdown import outline
from rag.ingest.split.separators import split_fixed, split_markdown, split_recursive, split_tokens, token_length
from rag.ingest.split.structure import HEADING_PATH, split_structure
from rag.ingest.types import LengthFunction, TextChunk

FRAGMENTS = [
    *("Hello", "world", "a", "bc", "def", "12", "3.5", ".NET", "我们", "知识库", "答案", "的", "中"),
    *(" ", "  ", "\t", "\n", "\n\n", "\n\n\n", " \n "),
    *(". ", ".", "...", "。", "。。", "！", "？", "，", "；", "! ", "? ", "###", "|"),
]
texts = st.lists(
    st.sampled_from(FRAGMENTS) | st.text(alphabet="ab .。\n中文，", max_size=6) | st.text(max_size=4),
    max_size=60,
).map("".join)
separators = st.sampled_from(["\n\n", "\n", "###", "。", ". ", "|", "，", "a", ""])
MARKDOWN_LINES = [
    *("# Install", "## Linux", "### Debian ###", "## Mac", "# Use", "#hashtag", "    # indented code"),
    *("```", "```python", "~~~", "", "  ", "Run the installer. Then reboot!", "运行安装程序。然后重启！"),
    *("Short.", "A longer line of words that goes on, and on; and on.", "中文内容，很长的一句话。"),
]
markdown_texts = st.lists(st.sampled_from(MARKDOWN_LINES), max_size=25).map("\n".join)
TABLE_LINES = ["| Item | Limit |", "|---|---|", "| Meals | 60 EUR |", "name: Ann | team: Ops", "a | b", "行 | 列"]
structured_texts = st.lists(st.sampled_from(MARKDOWN_LINES + TABLE_LINES), max_size=30).map("\n".join)


@st.composite
def sizes(draw: st.DrawFn, largest: int = 40) -> tuple[int, int]:
    """(max_size, overlap) with 0 <= overlap < max_size."""
    max_size = draw(st.integers(1, largest))
    return max_size, draw(st.integers(0, max_size - 1))


@pytest.fixture(scope="module")
def encoding(tiktoken_dir: Path | None) -> tiktoken.Encoding:
    """cl100k_base; `make` exports TIKTOKEN_CACHE_DIR (tiktoken_dir checks it exists)."""
    return tiktoken.get_encoding("cl100k_base")


def check(
    text: str,
    chunks: list[TextChunk],
    max_size: int,
    length: LengthFunction,
    *,
    unit: Callable[[str], bool],
    separator: str = "",
    allowed_loss: bytearray | None = None,
) -> None:
    """Offsets exact, in order, numbered; nothing lost but stripped terminators (and the fixed separator
    where it falls between chunks, and what `allowed_loss` marks); each within the limit."""
    covered = bytearray(len(text))
    for position, chunk in enumerate(chunks):
        assert chunk.position == position
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.text
        assert chunk.text == chunk.text.strip()
        covered[chunk.start : chunk.end] = b"\x01" * (chunk.end - chunk.start)
        assert length(chunk.text) <= max_size or unit(chunk.text), (chunk, length(chunk.text))
    for before, after in pairwise(chunks):
        assert before.start < after.start
        assert before.end <= after.end
    if separator:  # occurrences as str.split finds them: left to right, not overlapping
        start = text.find(separator)
        while start >= 0:
            covered[start : start + len(separator)] = b"\x01" * len(separator)
            start = text.find(separator, start + len(separator))
    if allowed_loss is not None:
        covered = bytearray(a | b for a, b in zip(covered, allowed_loss, strict=True))
    lost = {text[i] for i in range(len(text)) if not covered[i] and not text[i].isspace()}
    assert lost <= {".", "。"}, lost


def one_character(text: str) -> bool:
    return len(text) == 1


@settings(max_examples=200, deadline=None)
@given(text=texts, size=sizes())
def test_recursive_keeps_offsets_order_content_and_size(text: str, size: tuple[int, int]) -> None:
    max_size, overlap = size
    check(text, split_recursive(text, max_size=max_size, overlap=overlap), max_size, len, unit=one_character)


@settings(max_examples=200, deadline=None)
@given(text=texts, separator=separators, size=sizes())
def test_fixed_keeps_offsets_order_content_and_size(text: str, separator: str, size: tuple[int, int]) -> None:
    max_size, overlap = size
    chunks = split_fixed(text, separator=separator, max_size=max_size, overlap=overlap)
    check(text, chunks, max_size, len, unit=one_character, separator=separator)


@settings(max_examples=200, deadline=None)
@given(text=markdown_texts, size=sizes(80))
def test_markdown_keeps_offsets_order_content_and_size(text: str, size: tuple[int, int]) -> None:
    max_size, overlap = size
    chunks = split_markdown(text, max_size=max_size, overlap=overlap)
    check(text, chunks, max_size, len, unit=one_character)
    assert all(isinstance(chunk.metadata["headers"], list) for chunk in chunks)


def heading_lines(text: str) -> bytearray:
    """1 for each character of a heading line: the structure splitter may leave those out of every chunk."""
    marks = bytearray(len(text))
    for heading in outline(text).headings:
        marks[heading.start : heading.end] = b"\x01" * (heading.end - heading.start)
    return marks


@settings(max_examples=300, deadline=None)
@given(text=structured_texts, size=sizes(80), cut=st.integers(0, 400))
def test_structure_keeps_offsets_order_content_and_size(text: str, size: tuple[int, int], cut: int) -> None:
    max_size, overlap = size
    boundaries = (0, min(cut, len(text)))
    chunks = split_structure(text, max_size=max_size, overlap=overlap, boundaries=boundaries)
    headings = heading_lines(text)
    check(text, chunks, max_size, len, unit=one_character, allowed_loss=headings)
    assert all(isinstance(chunk.metadata.get(HEADING_PATH, []), list) for chunk in chunks)
    # No chunk spans an extracted part's start.
    assert not any(chunk.start < boundaries[1] < chunk.end for chunk in chunks)


@settings(max_examples=100, deadline=None)
@given(text=structured_texts, size=sizes(30))
def test_structure_in_tokens_keeps_offsets_order_content_and_size(
    encoding: tiktoken.Encoding, text: str, size: tuple[int, int]
) -> None:
    max_size, overlap = size
    length = token_length(encoding)
    chunks = split_structure(text, max_size=max_size, overlap=overlap, length=length)
    check(text, chunks, max_size, length, unit=one_character, allowed_loss=heading_lines(text))


@settings(max_examples=100, deadline=None)
@given(text=texts, separator=separators, size=sizes(30), mode=st.sampled_from(["recursive", "fixed", "markdown"]))
def test_token_length_splitters_keep_offsets_order_content_and_size(
    encoding: tiktoken.Encoding, text: str, separator: str, size: tuple[int, int], mode: str
) -> None:
    max_size, overlap = size
    length = token_length(encoding)
    if mode == "recursive":
        chunks = split_recursive(text, max_size=max_size, overlap=overlap, length=length)
    elif mode == "fixed":
        chunks = split_fixed(text, separator=separator, max_size=max_size, overlap=overlap, length=length)
    else:
        chunks = split_markdown(text, max_size=max_size, overlap=overlap, length=length)
    check(text, chunks, max_size, length, unit=one_character, separator=separator if mode == "fixed" else "")


@settings(max_examples=100, deadline=None)
@given(text=texts, size=sizes(30))
def test_token_windows_keep_offsets_and_content(encoding: tiktoken.Encoding, text: str, size: tuple[int, int]) -> None:
    max_tokens, overlap = size
    chunks = split_tokens(text, max_tokens=max_tokens, overlap_tokens=overlap, encoding=encoding)
    check(text, chunks, max_tokens, lambda chunk: 0, unit=one_character)
    assert all("\ufffd" not in chunk.text for chunk in chunks)
    # Each chunk is the characters touched by at most max_tokens consecutive tokens of the text: from the
    # last token touching its first character to the first token touching its last character.
    ends = list(accumulate(len(piece) for piece in encoding.decode_tokens_bytes(encoding.encode_ordinary(text))))
    for chunk in chunks:
        first = len(text[: chunk.start].encode()), len(text[: chunk.start + 1].encode())
        last = len(text[: chunk.end - 1].encode()), len(text[: chunk.end].encode())
        first_token = max(k for k in range(len(ends)) if _touches(ends, k, first))
        last_token = min(k for k in range(len(ends)) if _touches(ends, k, last))
        assert last_token - first_token + 1 <= max_tokens, chunk


def _touches(ends: list[int], token: int, span: tuple[int, int]) -> bool:
    """Whether token `token` (ending at byte ends[token]) shares a byte with span [start, end)."""
    start = ends[token - 1] if token else 0
    return start < span[1] and span[0] < ends[token]


def character_count(text: str) -> int:
    """len, but not the builtin: the splitters take their general path, measuring every chunk whole."""
    return len(text)


@settings(max_examples=200, deadline=None)
@given(text=texts, separator=separators, size=sizes())
@example(text="HelloHello的! ! Hello000000", separator="", size=(25, 14))  # overlap reaching before the text
def test_fast_character_paths_match_the_general_path(text: str, separator: str, size: tuple[int, int]) -> None:
    # With len the splitters find chunk ends by bisection and rfind instead of walking piece by piece.
    max_size, overlap = size
    for split in (split_recursive, split_markdown, split_structure):
        fast = split(text, max_size=max_size, overlap=overlap)
        assert fast == split(text, max_size=max_size, overlap=overlap, length=character_count)
    fast = split_fixed(text, separator=separator, max_size=max_size, overlap=overlap)
    assert fast == split_fixed(text, separator=separator, max_size=max_size, overlap=overlap, length=character_count)
