"""A question's distinctive terms (names, products, numbers) and whether an FAQ carries them: pure functions."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

Terms = Callable[[str], Sequence[str]]
"""Text -> lexical terms (the BM25 analyzer's `tokens`), so a name matches however the index cuts and stems it."""

# Han characters are blanked before words are read: a Chinese run has no case, and "借款5000元" must give the
# number alone, not the whole run as one "word with a digit".
_HAN: Final = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# Dots and hyphens stay inside a word ("node.js", "Wi-Fi", "C++"); an apostrophe splits it, so "I'd" gives "I".
_WORD: Final = re.compile(r"[^\W_]+(?:[+#]+|(?:[.-][^\W_]+)*)")
_SENTENCE_END: Final = re.compile(r"[.!?:;。！？：；\n]")


def _words(text: str) -> list[tuple[str, bool]]:
    """Each word of `text` (Han left out) and whether it opens a sentence, where capitals say nothing."""
    words: list[tuple[str, bool]] = []
    end = 0
    for match in _WORD.finditer(_HAN.sub(" ", text)):
        words.append((match.group(), not words or bool(_SENTENCE_END.search(text, end, match.start()))))
        end = match.end()
    return words


def _title_case(words: Sequence[tuple[str, bool]]) -> bool:
    """Two words or more capitalised inside sentences and none longer than four letters in lower case ("Play All
    Videos From One User", "Strikethrough with GitHub Markdown"): capitals there mark a title, not names. A title
    keeps only its articles, conjunctions and prepositions in lower case (Chicago Manual of Style 8.159), nearly
    all of four letters or fewer."""
    inner = [word for word, opens in words if not opens and word[0].isalpha()]
    if any(word[0].islower() and len(word) > 4 for word in inner):
        return False
    return sum(word[0].isupper() and len(word) > 1 for word in inner) >= 2


def _shouted(words: Sequence[tuple[str, bool]]) -> bool:
    letters = "".join(char for word, _ in words for char in word if char.isalpha())
    return bool(letters) and 2 * sum(char.isupper() for char in letters) > len(letters)


def _marked(word: str, *, shouted: bool) -> bool:
    """A word that is a name or a number however it stands: a digit in it ("2025", "office365"), or capitals
    after its first letter ("LinkedIn", "iPhone", "SQL") outside shouted text."""
    if any(char.isdigit() for char in word):
        return True
    return not shouted and len(word) > 1 and any(char.isupper() for char in word[1:])


@dataclass(frozen=True, slots=True)
class FaqWords:
    """What the rule reads of one FAQ (its questions and answers): its terms, and how often it writes each word
    (case-folded) capitalised inside a sentence and in lower case. Titles and shouted texts count for neither."""

    terms: frozenset[str]
    capitalised: Mapping[str, int]
    lower: Mapping[str, int]


def faq_words(texts: Iterable[str], terms: Terms) -> FaqWords:
    """The `FaqWords` of one FAQ's texts."""
    capitalised: Counter[str] = Counter()
    lower: Counter[str] = Counter()
    found: set[str] = set()
    for text in texts:
        found.update(terms(text))
        words = _words(text)
        if _title_case(words) or _shouted(words):
            continue
        for word, opens in words:
            if opens or len(word) < 2 or not word[0].isalpha():  # "I" is no name
                continue
            (capitalised if word[0].isupper() else lower)[word.casefold()] += 1
    return FaqWords(frozenset(found), dict(capitalised), dict(lower))


def written_names(query: str, faqs: Iterable[FaqWords]) -> frozenset[str]:
    """The words of `query` (case-folded) that these FAQs write as names: capitalised inside a sentence, twice or
    more and more often than not."""
    asked = {word.casefold() for word, _ in _words(query)}
    capitalised: Counter[str] = Counter()
    lower: Counter[str] = Counter()
    for faq in faqs:
        for word in asked:
            capitalised[word] += faq.capitalised.get(word, 0)
            lower[word] += faq.lower.get(word, 0)
    # Twice at least: one "Page" in a menu path ("File > Page setup") does not make the word a name.
    return frozenset(word for word in asked if capitalised[word] >= 2 and capitalised[word] > lower[word])


def distinctive_terms(query: str, terms: Terms, names: Iterable[str] = ()) -> frozenset[str]:
    """The terms of `query`'s names and numbers: the words an answer about something else would not carry.

    A word counts when it carries a digit or inner capitals; when it is capitalised inside a sentence of a query
    that is neither a title nor shouted; and, written any way, when `names` (from `written_names`) lists it
    ("facebook"). Rare words as such do not count: a paraphrase is full of them ("tolerate" for "allow").
    """
    known = frozenset(names)
    words = _words(query)
    shouted = _shouted(words)
    plain = not shouted and not _title_case(words)
    kept = []
    for word, opens in words:
        if len(word) < 2 and not word.isdigit():
            continue
        if _marked(word, shouted=shouted) or word.casefold() in known or (plain and not opens and word[0].isupper()):
            kept.append(word)
    return frozenset(term for word in kept for term in terms(word))


def carried(distinctive: Iterable[str], faq: FaqWords) -> bool:
    """Whether the FAQ holds every one of the `distinctive` terms, in a question or an answer."""
    return faq.terms.issuperset(distinctive)
