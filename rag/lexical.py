"""Lexical analysis for BM25: jieba search-mode tokens, lower-cased, punctuation dropped, English stemmed."""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

import jieba
import Stemmer

log = logging.getLogger(__name__)

# Texts whose terms are kept: rerank and MMR cut every candidate of a turn, and the same passages come back
# across turns. ~8k chunk texts of ~1 KB each hold about 10-20 MB.
_REMEMBERED = 8192

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (also Elasticsearch's `_english_`): the analyzer behind BEIR's
# BM25 baseline. Kept small on purpose: "how", "what" and the like still match FAQ questions.
ENGLISH_STOP_WORDS: Final = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    }
)
# English possessives ("vaccine's"), dropped before cutting as Lucene's EnglishPossessiveFilter does; jieba would
# otherwise leave a lone "s" term.
_POSSESSIVE: Final = re.compile(r"(?<=[A-Za-z])['\u2019][sS]\b")


def _is_word(token: str) -> bool:
    return any(unicodedata.category(char)[0] in "LN" for char in token)


def _is_english(term: str) -> bool:
    # Only plain ASCII words are stemmed: CJK, numbers and mixed tokens ("h1n1", "p53") stay as they are.
    return term.isascii() and term.isalpha()


class LexicalAnalyzer:
    """Cuts text into BM25 terms the same way at index time and at query time."""

    # What the terms are, recorded with the index (storage.weaviate.schema.BM25_TERMS_VERSION): 1 jieba terms,
    # lower-cased; 2 the same with English words Snowball-stemmed and English stop words dropped.
    VERSION: Final = 2

    def __init__(self, user_dict: Path | None = None) -> None:
        self._tokenizer = jieba.Tokenizer()
        self._user_dict = user_dict
        self._ready = False
        self._lock = threading.Lock()
        self._remembered: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._remembered_lock = threading.Lock()
        # A PyStemmer stemmer is not thread-safe, and terms are cut in worker threads: one stemmer per thread.
        self._stemmers = threading.local()

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

    def vocabulary(self) -> Iterable[str]:
        """The dictionary's words (loading it if need be), for tables keyed by the same words to share them."""
        self._ensure_ready()
        words: dict[str, int] = self._tokenizer.FREQ
        return words.keys()

    def tokens(self, text: str, *, remember: bool = True, stem: bool = True) -> list[str]:
        """Search-mode terms (whole words plus their dictionary sub-words), lower-cased, no punctuation; English
        words stemmed ("vaccines" and "vaccination" are both "vaccin") and English stop words left out.

        `remember=False` for one-off texts (an answer's sentences), so they do not push out the passages' terms;
        `stem=False` for words a person reads or a model embeds (a simplified question), never for BM25."""
        if not stem:
            return self._cut(text, lambda word: word)
        with self._remembered_lock:
            known = self._remembered.get(text)
            if known is not None:
                self._remembered.move_to_end(text)
                return list(known)
        terms = self._cut(text, self._stem)
        if remember:
            self._remember(text, tuple(terms))
        return terms

    def _cut(self, text: str, stem: Callable[[str], str]) -> list[str]:
        self._ensure_ready()
        words = (token.lower() for token in self._tokenizer.cut_for_search(_POSSESSIVE.sub("", text)))
        return [stem(word) for word in words if _is_word(word) and word not in ENGLISH_STOP_WORDS]

    def _stem(self, word: str) -> str:
        if not _is_english(word):
            return word
        stemmer: Stemmer.Stemmer | None = getattr(self._stemmers, "english", None)
        if stemmer is None:
            stemmer = self._stemmers.english = Stemmer.Stemmer("english")
        return str(stemmer.stemWord(word))

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
