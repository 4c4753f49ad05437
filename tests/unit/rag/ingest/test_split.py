"""Splitters on hand-picked English and Chinese text: separators, overlap, Dify's fixed-mode defects, headers."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiktoken

from rag.ingest.split.separators import (
    DEFAULT_SEPARATORS,
    parse_separator,
    split_fixed,
    split_markdown,
    split_recursive,
    split_tokens,
    token_length,
)
from rag.ingest.types import TextChunk

ENGLISH = "The bot reads your documents. It answers questions! Does it cite sources? Yes, always."
# Full-width punctuation on purpose: this is how Chinese documents are written.
CHINESE = "我们的知识库包含很多文档。机器人会从中找到答案！它会引用来源吗？会的，总是会。"


@pytest.fixture(scope="module")
def encoding(tiktoken_dir: Path | None) -> tiktoken.Encoding:
    """cl100k_base; `make` exports TIKTOKEN_CACHE_DIR (tiktoken_dir checks it exists)."""
    return tiktoken.get_encoding("cl100k_base")


def texts(chunks: list[TextChunk]) -> list[str]:
    return [chunk.text for chunk in chunks]


def assert_offsets(text: str, chunks: list[TextChunk]) -> None:
    assert [chunk.position for chunk in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text


# split_recursive


def test_recursive_keeps_english_punctuation_with_its_sentence() -> None:
    chunks = split_recursive(ENGLISH, max_size=40, overlap=0)
    assert texts(chunks) == [
        "The bot reads your documents.",
        "It answers questions!",
        "Does it cite sources? Yes, always.",
    ]
    assert_offsets(ENGLISH, chunks)


def test_recursive_keeps_chinese_punctuation_with_its_sentence() -> None:
    chunks = split_recursive(CHINESE, max_size=15, overlap=0)
    assert texts(chunks) == ["我们的知识库包含很多文档。", "机器人会从中找到答案！", "它会引用来源吗？会的，总是会。"]
    assert_offsets(CHINESE, chunks)


def test_recursive_merges_small_pieces_up_to_max_size() -> None:
    chunks = split_recursive(ENGLISH, max_size=60, overlap=0)
    assert texts(chunks) == [
        "The bot reads your documents.",
        "It answers questions! Does it cite sources? Yes, always.",
    ]


def test_recursive_overlap_repeats_the_last_pieces_of_the_previous_chunk() -> None:
    text = "One two three four five six seven eight nine ten"
    chunks = split_recursive(text, max_size=20, overlap=10)
    # "three four " would be 11 characters of overlap: only "four " fits in 10.
    assert texts(chunks) == ["One two three four", "four five six seven", "six seven eight", "eight nine ten"]
    assert_offsets(text, chunks)


def test_recursive_prefers_paragraphs_then_lines() -> None:
    text = "Title\n\nFirst line.\nSecond line.\n\nLast paragraph."
    assert texts(split_recursive(text, max_size=30, overlap=0)) == [
        "Title",
        "First line.\nSecond line.",
        "Last paragraph.",
    ]
    assert texts(split_recursive(text, max_size=20, overlap=0)) == [
        "Title",
        "First line.",
        "Second line.",
        "Last paragraph.",
    ]


def test_recursive_splits_by_characters_as_the_last_resort() -> None:
    chunks = split_recursive("abcdefghij", max_size=4, overlap=1)
    assert texts(chunks) == ["abcd", "defg", "ghij"]


def test_recursive_strips_whitespace_and_drops_empty_chunks() -> None:
    text = "  first part  \n\n   \n\n  second part  "
    chunks = split_recursive(text, max_size=20, overlap=0)
    assert texts(chunks) == ["first part", "second part"]
    assert_offsets(text, chunks)


def test_recursive_strips_a_leading_full_stop_and_moves_start() -> None:
    chunks = split_recursive("甲乙丙。。丁戊", max_size=4, overlap=0)
    assert texts(chunks) == ["甲乙丙。", "丁戊"]
    assert (chunks[1].start, chunks[1].end) == (5, 7)


def test_recursive_keeps_a_leading_dot_that_starts_a_word() -> None:
    assert texts(split_recursive("Use .NET here", max_size=5, overlap=0)) == ["Use", ".NET", "here"]


@pytest.mark.parametrize("text", ["", "   ", "\n\n\n", "\t \n"])
def test_recursive_returns_nothing_for_blank_text(text: str) -> None:
    assert split_recursive(text, max_size=10, overlap=2) == []


def test_recursive_text_that_fits_is_one_chunk() -> None:
    assert split_recursive(" short text ", max_size=100, overlap=10) == [TextChunk("short text", 1, 11, 0)]


def test_recursive_chunks_fit_in_tokens(encoding: tiktoken.Encoding) -> None:
    length = token_length(encoding)
    text = (ENGLISH + " " + CHINESE + "\n\n") * 5
    chunks = split_recursive(text, max_size=12, overlap=3, length=length)
    assert len(chunks) > 5
    assert all(length(chunk.text) <= 12 for chunk in chunks)
    assert_offsets(text, chunks)


def test_recursive_with_custom_separators() -> None:
    chunks = split_recursive("a|b|c|d", max_size=4, overlap=0, separators=("|",))
    assert texts(chunks) == ["a|b|", "c|d"]


@pytest.mark.parametrize(
    ("max_size", "overlap", "message"),
    [
        (0, 0, "max_size must be at least 1, got 0"),
        (-5, 0, "max_size must be at least 1, got -5"),
        (10, 10, "overlap must be at least 0 and less than max_size (10), got 10"),
        (10, 11, "overlap must be at least 0 and less than max_size (10), got 11"),
        (10, -1, "overlap must be at least 0 and less than max_size (10), got -1"),
    ],
)
def test_splitters_reject_sizes_out_of_range(max_size: int, overlap: int, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        split_recursive("text", max_size=max_size, overlap=overlap)
    with pytest.raises(ValueError, match="must be at least"):
        split_fixed("text", separator="\n", max_size=max_size, overlap=overlap)
    with pytest.raises(ValueError, match="must be at least"):
        split_markdown("text", max_size=max_size, overlap=overlap)


def test_token_windows_reject_sizes_out_of_range(encoding: tiktoken.Encoding) -> None:
    with pytest.raises(ValueError, match="overlap_tokens must be at least 0 and less than max_tokens"):
        split_tokens("text", max_tokens=4, overlap_tokens=4, encoding=encoding)


# split_fixed: Dify's custom-separator mode, with its three defects fixed


def test_fixed_merges_short_pieces_up_to_max_size() -> None:
    # Dify makes one chunk per piece however small.
    text = "Q1? A1.\n\nQ2? A2.\n\nQ3? A3."
    chunks = split_fixed(text, separator="\n\n", max_size=20, overlap=0)
    assert texts(chunks) == ["Q1? A1.\n\nQ2? A2.", "Q3? A3."]
    assert_offsets(text, chunks)


def test_fixed_overlaps_chunks_even_when_pieces_are_longer_than_the_overlap() -> None:
    # Dify ignores overlap between pieces: here every piece is longer than the overlap.
    text = "First paragraph has several words in it.\n\nSecond paragraph also has words.\n\nThird one is here too."
    chunks = split_fixed(text, separator="\n\n", max_size=60, overlap=15)
    assert texts(chunks) == [
        "First paragraph has several words in it.",
        "words in it.\n\nSecond paragraph also has words.",
        "also has words.\n\nThird one is here too.",
    ]
    assert_offsets(text, chunks)


def test_fixed_overlap_prefers_a_sentence_boundary() -> None:
    text = "Alpha beta. Gamma delta.\n\nNext piece here."
    chunks = split_fixed(text, separator="\n\n", max_size=40, overlap=15)
    assert texts(chunks) == ["Alpha beta. Gamma delta.", "Gamma delta.\n\nNext piece here."]


def test_fixed_with_an_empty_separator_splits_recursively_not_by_character() -> None:
    # Dify cuts the text into single characters.
    chunks = split_fixed(ENGLISH, separator="", max_size=40, overlap=0)
    assert chunks == split_recursive(ENGLISH, max_size=40, overlap=0)
    assert all(len(chunk.text) > 1 for chunk in chunks)


def test_fixed_never_leaves_the_separator_at_a_chunk_edge() -> None:
    text = "a###b###c"
    assert texts(split_fixed(text, separator="###", max_size=3, overlap=0)) == ["a", "b", "c"]
    assert texts(split_fixed(text, separator="###", max_size=5, overlap=0)) == ["a###b", "c"]


def test_fixed_splits_a_long_piece_recursively() -> None:
    text = "Short item.###A much longer item. It has three sentences. Each one is short.###Tail."
    chunks = split_fixed(text, separator="###", max_size=30, overlap=0)
    assert texts(chunks) == [
        "Short item.",
        "A much longer item.",
        "It has three sentences.",
        "Each one is short.",
        "Tail.",
    ]
    assert_offsets(text, chunks)


def test_fixed_chunks_fit_in_tokens(encoding: tiktoken.Encoding) -> None:
    length = token_length(encoding)
    text = "\n\n".join([ENGLISH, CHINESE, "short", ENGLISH * 3, "另一段。"])
    chunks = split_fixed(text, separator="\n\n", max_size=16, overlap=4, length=length)
    assert all(length(chunk.text) <= 16 for chunk in chunks)
    assert_offsets(text, chunks)


@pytest.mark.parametrize(
    ("raw", "separator"),
    [
        ("\\n\\n", "\n\n"),
        ("\\n", "\n"),
        ("\\t", "\t"),
        ("###", "###"),
        ("\n\n", "\n\n"),
        ("\\\\n", "\\n"),
        ("\\x", "\\x"),
    ],
)
def test_parse_separator_decodes_escapes(raw: str, separator: str) -> None:
    assert parse_separator(raw) == separator


# split_markdown

GUIDE = """Intro text.
# Install
## Linux
Run apt.
```bash
# not a header, a shell comment
```
## Mac
Use brew.
# Use ##
Ask the bot.
"""


def test_markdown_tags_chunks_with_their_header_path() -> None:
    chunks = split_markdown(GUIDE, max_size=200, overlap=0)
    assert [(chunk.text.splitlines()[0], chunk.metadata["headers"]) for chunk in chunks] == [
        ("Intro text.", []),
        ("# Install", ["Install", "Linux"]),
        ("## Mac", ["Install", "Mac"]),
        ("# Use ##", ["Use"]),
    ]
    assert_offsets(GUIDE, chunks)


def test_markdown_ignores_headers_inside_code_fences() -> None:
    chunks = split_markdown(GUIDE, max_size=200, overlap=0)
    assert "# not a header, a shell comment" in chunks[1].text


def test_markdown_joins_a_header_only_section_to_the_next() -> None:
    chunks = split_markdown(GUIDE, max_size=200, overlap=0)
    assert chunks[1].text.startswith("# Install\n## Linux\nRun apt.")


@pytest.mark.parametrize("line", ["#hashtag", "    # indented code", "####### seven", "~~~\n# fenced\n~~~"])
def test_markdown_does_not_split_at_what_is_not_a_header(line: str) -> None:
    text = f"# Top\nbody\n{line}\nmore"
    chunks = split_markdown(text, max_size=200, overlap=0)
    assert texts(chunks) == [text]
    assert chunks[0].metadata["headers"] == ["Top"]


def test_markdown_splits_a_long_section_keeping_its_path() -> None:
    text = "# Guide\n## Steps\n" + "Do this first. Then do that. Finally check it. " * 4
    chunks = split_markdown(text, max_size=50, overlap=0)
    assert len(chunks) > 3
    assert all(len(chunk.text) <= 50 for chunk in chunks)
    assert all(chunk.metadata["headers"] == ["Guide", "Steps"] for chunk in chunks)
    assert_offsets(text, chunks)


def test_markdown_unclosed_fence_runs_to_the_end() -> None:
    text = "# A\ntext\n```\n# B\n"
    assert [chunk.metadata["headers"] for chunk in split_markdown(text, max_size=100, overlap=0)] == [["A"]]


def test_markdown_sibling_headers_replace_each_other() -> None:
    text = "# A\na\n### Deep\nd\n## B\nb\n# C\nc"
    chunks = split_markdown(text, max_size=100, overlap=0)
    assert [chunk.metadata["headers"] for chunk in chunks] == [["A"], ["A", "Deep"], ["A", "B"], ["C"]]


# split_tokens and token_length


def test_token_windows_on_chinese_never_cut_a_character(encoding: tiktoken.Encoding) -> None:
    chunks = split_tokens(CHINESE, max_tokens=5, overlap_tokens=1, encoding=encoding)
    assert len(chunks) > 5
    assert_offsets(CHINESE, chunks)
    assert all("\ufffd" not in chunk.text for chunk in chunks)
    covered = set().union(*(range(chunk.start, chunk.end) for chunk in chunks))
    assert covered == set(range(len(CHINESE)))


def test_token_windows_overlap_by_the_given_tokens(encoding: tiktoken.Encoding) -> None:
    text = "one two three four five six seven eight nine ten"  # one token per word
    chunks = split_tokens(text, max_tokens=4, overlap_tokens=1, encoding=encoding)
    assert texts(chunks) == ["one two three four", "four five six seven", "seven eight nine ten"]


def test_token_windows_of_blank_text_are_empty(encoding: tiktoken.Encoding) -> None:
    assert split_tokens("", max_tokens=4, overlap_tokens=0, encoding=encoding) == []
    assert split_tokens("   ", max_tokens=4, overlap_tokens=0, encoding=encoding) == []


def test_token_length_counts_like_the_encoding(encoding: tiktoken.Encoding) -> None:
    length = token_length(encoding)
    for text in ["tiktoken is great!", CHINESE, "", "x" * 5000]:
        assert length(text) == len(encoding.encode_ordinary(text))
        assert length(text) == length(text)  # the second call is served from the cache


def test_token_length_counts_special_token_text_as_plain_text(encoding: tiktoken.Encoding) -> None:
    assert token_length(encoding)("<|endoftext|>") > 1


def test_default_separators_end_with_the_character_fallback() -> None:
    assert DEFAULT_SEPARATORS[-1] == ""
    assert DEFAULT_SEPARATORS[:2] == ("\n\n", "\n")
