"""The conversations' temporary web knowledge: each one's searched queries and passages, in memory, bounded.

Kept in memory rather than as hidden knowledge bases in Weaviate: a conversation's web passages number tens, are
ranked in well under a millisecond here, and need no index, no `/kb list` filter and no cleanup of a crashed
instance's leftovers. What is lost with the process is only a repeat of a search. Each scope (a conversation since
its last `/new`) lives at most `max_age` seconds after its last use, well under any retention period, so retention
never leaves web passages behind, and `forget` drops a scope at once.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rag.types import Vector
from rag.web.compress import WebPassage


@dataclass(slots=True)
class ScratchKnowledge:
    """One conversation's web passages, their vectors, and the queries already searched."""

    passages: dict[str, WebPassage] = field(default_factory=dict)
    vectors: dict[str, Vector | None] = field(default_factory=dict)
    queries: set[str] = field(default_factory=set)
    used: float = 0.0

    def add(self, passages: Sequence[WebPassage], vectors: Sequence[Vector | None]) -> None:
        """Add passages not held yet (a URL found again keeps its first passages)."""
        for passage, vector in zip(passages, vectors, strict=True):
            if passage.id not in self.passages:
                self.passages[passage.id] = passage
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

    def forget(self, prefix: str) -> int:
        """Drop every scope whose key starts with `prefix` (a conversation's id drops all its scopes)."""
        keys = [key for key in self._scopes if key.startswith(prefix)]
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
