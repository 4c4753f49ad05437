"""TokenCounter: counts and trims text in tiktoken tokens, loaded from the offline cache folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.tokens import TokenCounter

# Full-width punctuation on purpose: this is how Chinese documents are written.
CHINESE = "我们的知识库包含了很多关于产品的文档和常见问题解答，机器人会从中找到答案。"


@pytest.fixture
def counter(tiktoken_dir: Path | None, monkeypatch: pytest.MonkeyPatch) -> TokenCounter:
    """cl100k_base from TIKTOKEN_CACHE_DIR when set, else downloaded by tiktoken itself."""
    if tiktoken_dir is not None:
        # TokenCounter writes TIKTOKEN_CACHE_DIR into os.environ; monkeypatch restores it afterwards.
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tiktoken_dir))
    return TokenCounter("cl100k_base", cache_dir=tiktoken_dir)


def test_counter_names_its_encoding(counter: TokenCounter) -> None:
    assert counter.name == "cl100k_base"


@pytest.mark.parametrize(
    ("text", "tokens"),
    # "tiktoken is great!" -> 6 is the cl100k_base example in OpenAI's cookbook ("How to count tokens").
    [("tiktoken is great!", 6), ("hello world", 2), ("", 0)],
)
def test_count_matches_known_token_counts(counter: TokenCounter, text: str, tokens: int) -> None:
    assert counter.count(text) == tokens


def test_special_token_text_is_counted_as_plain_text(counter: TokenCounter) -> None:
    assert counter.count("<|endoftext|>") > 1


def test_chinese_text_has_tokens(counter: TokenCounter) -> None:
    assert counter.count(CHINESE) > 0


def test_truncate_keeps_a_prefix_within_the_limit(counter: TokenCounter) -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 20
    trimmed = counter.truncate(text, 10)
    assert trimmed != text
    assert text.startswith(trimmed)
    assert counter.count(trimmed) == 10


@pytest.mark.parametrize("text", ["hello world", "tiktoken is great!"])
def test_truncate_returns_text_that_fits_unchanged(counter: TokenCounter, text: str) -> None:
    assert counter.truncate(text, 10) == text
    assert counter.truncate(text, counter.count(text)) == text


def test_truncate_never_splits_a_chinese_character(counter: TokenCounter) -> None:
    for limit in range(1, counter.count(CHINESE)):
        trimmed = counter.truncate(CHINESE, limit)
        assert CHINESE.startswith(trimmed), (limit, trimmed)
        assert counter.count(trimmed) <= limit
