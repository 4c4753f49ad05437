"""Whether a question leans on the conversation so far: only then may the previous answer's sources come back."""

from __future__ import annotations

import re
from typing import Final

# Words that point back at something said before ("it", "that one", "那个", "它").
_REFERRING_EN: Final = frozenset(
    [
        "it",
        "its",
        "itself",
        "this",
        "that",
        "these",
        "those",
        "they",
        "them",
        "their",
        "theirs",
        "he",
        "him",
        "his",
        "she",
        "her",
        "there",
        "one",
        "ones",
    ]
)
# Openings of an ellipsis that borrows the previous question ("what about X?", "and the Y?").
_ELLIPSIS_EN: Final = re.compile(r"^\s*(?:what about|how about|and|also|same for|what if)\b", re.IGNORECASE)
_REFERRING_ZH: Final = re.compile(r"[它这那其][个些样种里儿]?|他们|她们|他|她|呢[？?。！!]*\s*$")
_WORD: Final = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)?")
_HAN: Final = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# "Why?", "How so?", "和年假？": too short to stand alone.
_SHORT_WORDS: Final = 2
_SHORT_HAN: Final = 3


def leans_on_history(query: str, rewritten: str = "") -> bool:
    """True when the question depends on what came before: the rewriter resolved something in it, it points back
    (a pronoun, "what about…", "…呢"), or it is too short to stand alone. A self-contained question is False, so
    the previous answer's sources cannot answer it again."""
    if rewritten.strip() and _normal(rewritten) != _normal(query):
        return True
    if _HAN.search(query):
        return bool(_REFERRING_ZH.search(query)) or len(_HAN.findall(query)) <= _SHORT_HAN
    words = [word.lower() for word in _WORD.findall(query)]
    return bool(_ELLIPSIS_EN.match(query)) or any(word in _REFERRING_EN for word in words) or len(words) <= _SHORT_WORDS


def _normal(text: str) -> str:
    return " ".join(text.lower().split())
