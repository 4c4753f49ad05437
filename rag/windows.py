"""A long passage cut into short windows of whole sentences, so a question can be matched to the part that answers."""

from __future__ import annotations

import re
from typing import Final

# A sentence ends at . ! ? before a space, after a full-width stop, or at a line break (a table row, a list item).
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])|\n+")
_WORD: Final = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[^\W_]+")
# About two or three sentences: short enough that one answering sentence is most of its window.
WINDOW_WORDS: Final = 60


def word_count(text: str) -> int:
    """Words, counting each Chinese character as one."""
    return len(_WORD.findall(text))


def passage_windows(text: str, max_words: int = WINDOW_WORDS) -> list[str]:
    """Consecutive sentences grouped into windows of up to `max_words` words (a longer sentence is its own window).

    A passage that fits one window has none: it is matched whole.
    """
    if word_count(text) <= max_words:
        return []
    windows: list[str] = []
    current: list[str] = []
    size = 0
    for sentence in (part.strip() for part in _SENTENCE_END.split(text)):
        if not sentence:
            continue
        words = word_count(sentence)
        if current and size + words > max_words:
            windows.append(" ".join(current))
            current, size = [], 0
        current.append(sentence)
        size += words
    if current:
        windows.append(" ".join(current))
    return windows if len(windows) > 1 else []
