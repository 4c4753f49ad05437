"""The words that carry no match: question words, particles, pronouns and auxiliaries, English and Chinese.

A sentence or an FAQ that shares only these with a question ("what", "do", 的, 是, 什么, 吗) is not about it. They are
cut by the caller's own analyzer (`content_terms`), so stemming and segmentation apply to them as to the question.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Final

Terms = Callable[[str], Sequence[str]]
"""Text -> its lexical terms (jieba search-mode terms in the product)."""

FUNCTION_WORDS: Final = (
    # English question words, auxiliaries and pronouns (Lucene's stop words are dropped by the analyzer already).
    *("how", "what", "which", "who", "whom", "whose", "when", "where", "why", "do", "does", "did", "done"),
    *("can", "could", "should", "would", "shall", "may", "might", "must", "am", "been", "being", "have", "has"),
    *("had", "get", "gets", "got", "i", "me", "my", "mine", "you", "your", "yours", "we", "our", "us", "he", "him"),
    *("his", "she", "her", "its", "them", "many", "much", "some", "any", "please", "tell", "know"),
    # Chinese particles, question words, pronouns and the commonest verbs of asking.
    *("的", "了", "是", "在", "有", "和", "与", "及", "或", "也", "都", "就", "还", "又", "而", "被", "把", "对"),
    *("从", "向", "给", "为", "以", "于", "之", "其", "个", "些", "吗", "呢", "吧", "啊", "呀", "嘛", "么", "着"),
    *("过", "得", "地", "要", "会", "能", "可", "可以", "能否", "是否", "什么", "怎么", "怎样", "怎么样", "如何"),
    *("多少", "几", "哪", "哪些", "哪个", "哪里", "为什么", "为何", "请问", "请", "一下", "我", "我们", "你"),
    *("你们", "他", "她", "它", "他们", "这", "那", "这个", "那个", "有没有", "没有"),
)


@functools.lru_cache(maxsize=8)
def function_terms(terms: Terms) -> frozenset[str]:
    """FUNCTION_WORDS as `terms` cuts them: once per analyzer, not once per question."""
    return frozenset(term for word in FUNCTION_WORDS for term in terms(word))


def content_terms(text: str, terms: Terms) -> set[str]:
    """The terms of `text` that can carry a match: all but the function words."""
    return set(terms(text)) - function_terms(terms)
