"""Plain records that cross out of storage: repositories and the index return these, never rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal


@dataclass(frozen=True, slots=True)
class KnowledgeBaseRecord:
    """A knowledge base as the layers above see it."""

    id: str
    name: str
    description: str
    chunking: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """One child chunk to index: display text, BM25 text and the ids that join back to SQL."""

    chunk_id: str
    kb_id: str
    document_id: str
    segment_id: str | None
    position: int
    start: int
    end: int
    text: str
    bm25_text: str
    chunk_type: str = "text"


@dataclass(frozen=True, slots=True)
class FaqQuestionRecord:
    """One question variant of an FAQ to index; `kind` is standard, similar or negative."""

    variant_id: str
    kb_id: str
    faq_id: str
    kind: Literal["standard", "similar", "negative"]
    text: str
    bm25_text: str


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One index match; `score` is the leg's own (cosine similarity, BM25 or fused)."""

    id: str
    score: float
    properties: dict[str, Any] = field(default_factory=dict)
