"""Lexical analysis for BM25: jieba search-mode tokens, lower-cased, punctuation dropped."""

from __future__ import annotations

import logging
import threading
import unicodedata
from collections import OrderedDict
from pathlib import Path

import jieba

log = logging.getLogger(__name__)

# Texts whose terms are kept: rerank and MMR cut every candidate of a turn, and the same passages come back
# across turns. ~8k chunk texts of ~1 KB each hold about 10-20 MB.
_REMEMBERED = 8192


def _is_word(token: str) -> bool:
    return any(unicodedata.category(char)[0] in "LN" for char in token)


class LexicalAnalyzer:
    """Cuts text into BM25 terms the same way at index time and at query time."""

    def __init__(self, user_dict: Path | None = None) -> None:
        self._tokenizer = jieba.Tokenizer()
        self._user_dict = user_dict
        self._ready = False
        self._lock = threading.Lock()
        self._remembered: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._remembered_lock = threading.Lock()

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
        with self._remembered_lock:
            known = self._remembered.get(text)
            if known is not None:
                self._remembered.move_to_end(text)
                return list(known)
        self._ensure_ready()
        terms = [token.lower() for token in self._tokenizer.cut_for_search(text) if _is_word(token)]
        self._remember(text, tuple(terms))
        return terms

    def remember(self, text: str, bm25_text: str) -> None:
        """Take `text`'s terms from its stored BM25 text (what `bm25_text` made of it), sparing a second cut."""
        self._remember(text, tuple(bm25_text.split()))

    def _remember(self, text: str, terms: tuple[str, ...]) -> None:
        with self._remembered_lock:
            self._remembered[text] = terms
            self._remembered.move_to_end(text)
            if len(self._remembered) > _REMEMBERED:
                self._remembered.popitem(last=False)

    def bm25_text(self, text: str) -> str:
        """The terms joined by spaces: what the index's lowercase-tokenised BM25 field stores."""
        return " ".join(self.tokens(text))
