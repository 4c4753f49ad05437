"""The conversations' temporary web knowledge: each one's searched queries and passages, in memory, bounded.

Kept in memory rather than as hidden knowledge bases in Weaviate: a conversation's web passages number tens (each
tokenised and embedded once, when found), are ranked in a few milliseconds, and need no index, no `/kb list`
filter and no cleanup of a crashed instance's leftovers. What is lost with the process is only a repeat of a
search. Each scope (a conversation since its last `/new`) lives at most `max_age` seconds after its last use, well
under any retention period (days), so retention never leaves web passages behind; `forget` drops a conversation's
scopes at once.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rag.types import Vector
from rag.web.compress import WebPassage


def scope_key(conversation_id: str, started: str) -> str:
    """The scope of a conversation since `started` (when it was last started over; "" for never)."""
    return f"{conversation_id}@{started}"


@dataclass(slots=True)
class ScratchKnowledge:
    """One conversation's web passages, their words and vectors, and the queries already searched."""

    passages: dict[str, WebPassage] = field(default_factory=dict)
    terms: dict[str, list[str]] = field(default_factory=dict)
    vectors: dict[str, Vector | None] = field(default_factory=dict)
    queries: set[str] = field(default_factory=set)
    used: float = 0.0

    def add(self, passages: Sequence[WebPassage], terms: Sequence[list[str]], vectors: Sequence[Vector | None]) -> None:
        """Add passages not held yet (a URL found again keeps its first passages)."""
        for passage, words, vector in zip(passages, terms, vectors, strict=True):
            if passage.id not in self.passages:
                self.passages[passage.id] = passage
                self.terms[passage.id] = words
                self.vectors[passage.id] = vector


class ScratchStore:
    """The scratch knowledge of the most recently used conversations, each dropped after `max_age` idle seconds."""

    def __init__(
        self, *, max_scopes: int = 1000, max_age: float = 3600.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._scopes: OrderedDict[str, ScratchKnowledge] = OrderedDict()
        self._max_scopes = max_scopes
        self._max_age = max_age
        self._clock = clock

    def scope(self, key: str) -> ScratchKnowledge:
        """The scope's knowledge, new when it has none (or its time ran out)."""
        now = self._clock()
        self._expire(now)
        knowledge = self._scopes.pop(key, None) or ScratchKnowledge()
        knowledge.used = now
        self._scopes[key] = knowledge
        while len(self._scopes) > self._max_scopes:
            self._scopes.popitem(last=False)
        return knowledge

    def forget(self, conversation_id: str) -> int:
        """Drop every scope of the conversation; how many there were."""
        keys = [key for key in self._scopes if key.startswith(scope_key(conversation_id, ""))]
        for key in keys:
            del self._scopes[key]
        return len(keys)

    def __contains__(self, key: str) -> bool:
        return key in self._scopes

    def _expire(self, now: float) -> None:
        while self._scopes:
            key, knowledge = next(iter(self._scopes.items()))
            if now - knowledge.used <= self._max_age:
                return
            del self._scopes[key]
