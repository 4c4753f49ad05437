"""Query expansion for thin results: a few simpler variants of the question to search again (pure, no I/O)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final

# WeKnora expands when fewer than max(1, top_k / 2) results come back, with at most 5 variants.
MAX_VARIANTS: Final = 5

_QUOTED: Final = re.compile(r"[\"“”「」『』《》']([^\"“”「」『』《》']{2,})[\"“”「」『』《》']")
_DELIMITERS: Final = re.compile(r"[,，;；、/|。？！?!]+|\s+(?:and|or|vs\.?|versus)\s+|[和与及或]")
_QUESTION_WORDS_EN: Final = re.compile(
    r"\b(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could|should|would|will|"
    r"please|tell me|explain)\b",
    re.IGNORECASE,
)
_QUESTION_WORDS_ZH: Final = re.compile(
    r"请问|请|什么样|什么|怎么样|怎么|怎样|如何|为什么|为何|哪些|哪个|哪里|哪儿|多少|几个|是否|能否|可以吗|吗|呢|吧"
)
_STOPWORD_TEXT: Final = """
    a an the of to in on at for from by with about into over under and or but not no is are was were be been
    being do does did have has had i me my we our you your he she it its they them their this that these those
    there here what which who whom whose when where why how can could should would will shall may might must
    please tell explain any some all much many more most 的 了 是 在 我 你 他 她 它 们 吗 呢 吧 啊 和 与 及 或
    也 都 就 还 请 请问 什么 怎么 怎样 如何 为什么 哪些 哪个 多少 一个 这个 那个 有 没有 可以 能"""
STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())


def _squash(text: str) -> str:
    return " ".join(text.split()).strip(" ,，。.?？!！;；:：")


def keywords(query: str, tokens: Callable[[str], Sequence[str]]) -> str:
    """The query's words without stopwords, in order, each once."""
    kept = [token for token in dict.fromkeys(tokens(query)) if token not in STOPWORDS]
    return " ".join(kept)


def quoted_phrases(query: str) -> list[str]:
    """Phrases the asker put in quotes or title marks."""
    return [_squash(match) for match in _QUOTED.findall(query) if _squash(match)]


def delimiter_parts(query: str) -> list[str]:
    """The pieces between commas, semicolons, slashes and "and"/"or", when there are several."""
    parts = [_squash(part) for part in _DELIMITERS.split(query)]
    parts = [part for part in parts if len(part) >= 2]
    return parts if len(parts) > 1 else []


def without_question_words(query: str) -> str:
    """The query with interrogatives and politeness words taken out."""
    return _squash(_QUESTION_WORDS_ZH.sub(" ", _QUESTION_WORDS_EN.sub(" ", query)))


def expand_query(query: str, tokens: Callable[[str], Sequence[str]], limit: int = MAX_VARIANTS) -> list[str]:
    """Up to `limit` distinct variants of `query`, none equal to it (casefolded), most specific first."""
    candidates = [
        keywords(query, tokens),
        *quoted_phrases(query),
        *delimiter_parts(query),
        without_question_words(query),
    ]
    seen = {_squash(query).casefold()}
    variants: list[str] = []
    for candidate in candidates:
        key = candidate.casefold()
        if key not in seen and keywords(candidate, tokens):
            seen.add(key)
            variants.append(candidate)
    return variants[:limit]
