"""Values that travel through rag: chat messages and vectors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Vector = list[float]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of a chat-model prompt."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """One retrieved passage or FAQ as it moves through search, rerank and merge.

    `score` is the current score (fused, then reranked); `base_score` keeps the retrieval score,
    `model_score` the reranker's. `legs` says which searches found it (vector, bm25, faq, history, direct).
    `vector` is the passage's stored embedding when the search brought it (so RERANK need not look it up).
    """

    id: str
    kind: Literal["chunk", "faq"]
    kb_id: str
    text: str
    score: float
    legs: frozenset[str] = frozenset()
    document_id: str | None = None
    segment_id: str | None = None
    position: int = 0
    start: int = 0
    end: int = 0
    base_score: float = 0.0
    model_score: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    vector: Vector | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class KnownVectors:
    """Embeddings the caller already holds: the query's, and each text's in order (None where not known)."""

    query: Vector | None
    texts: Sequence[Vector | None]
