"""Lexical analysis for BM25: jieba search-mode tokens, lower-cased, punctuation dropped."""

from __future__ import annotations

import logging
import threading
import unicodedata
from pathlib import Path

import jieba

log = logging.getLogger(__name__)


def _is_word(token: str) -> bool:
    return any(unicodedata.category(char)[0] in "LN" for char in token)


class LexicalAnalyzer:
    """Cuts text into BM25 terms the same way at index time and at query time."""

    def __init__(self, user_dict: Path | None = None) -> None:
        self._tokenizer = jieba.Tokenizer()
        self._user_dict = user_dict
        self._ready = False
        self._lock = threading.Lock()

    def _ensure_ready(self) -> None:
        # jieba builds its prefix dictionary lazily (~1 s); do it once, thread-safely.
        with self._lock:
            if self._ready:
                return
            jieba.setLogLevel(logging.WARNING)
            self._tokenizer.initialize()
            if self._user_dict is not None:
                self._tokenizer.load_userdict(str(self._user_dict))
            self._ready = True

    def tokens(self, text: str) -> list[str]:
        """Search-mode terms (whole words plus their dictionary sub-words), lower-cased, no punctuation."""
        self._ensure_ready()
        return [token.lower() for token in self._tokenizer.cut_for_search(text) if _is_word(token)]

    def bm25_text(self, text: str) -> str:
        """The terms joined by spaces: what the index's lowercase-tokenised BM25 field stores."""
        return " ".join(self.tokens(text))
