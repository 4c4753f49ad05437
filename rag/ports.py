"""Protocols rag consumes; lower layers and adapters satisfy them structurally."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from collections.abc import Collection as AbcCollection
from typing import Literal, Protocol

from rag.types import ChatMessage, KnownVectors, Vector
from storage.records import ChunkRecord, FaqQuestionRecord
from storage.tables.records import QueryResult, Sheet, TableSchema
from storage.weaviate.collections import Collection

EmbedKind = Literal["passage", "query"]
"""What a text is to the model: a passage that is searched, or a query that searches; some models prompt each
differently (e5's "query: " and "passage: ", bge's query instruction). Stored texts are passages."""


class Embedder(Protocol):
    """Turns texts into vectors of one fixed model."""

    @property
    def provider(self) -> str:
        """Where the vectors come from (`local`, `openai`), part of the cache key."""
        ...

    @property
    def model_id(self) -> str:
        """The model's name, part of the cache key."""
        ...

    @property
    def dimension(self) -> int | None:
        """Vector length, or None until the first call reveals it."""
        ...

    def prompt(self, kind: EmbedKind) -> str:
        """The text the model puts before every text of `kind` ("" for none); caches key on prompt + text."""
        ...

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        """One vector per text, in order, each embedded as a `kind` (that is, after that kind's prompt)."""
        ...


class EmbeddingCache(Protocol):
    """Stored vectors by (provider, model, content hash)."""

    async def get_many(self, provider: str, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        """The cached vectors among `hashes`."""
        ...

    async def put_many(self, provider: str, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Store vectors by hash."""
        ...


class ChatModel(Protocol):
    """A chat-completion model."""

    @property
    def model_id(self) -> str:
        """The model's name."""
        ...

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        """The whole answer at once."""
        ...

    def stream(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        """The answer as text deltas, as the model writes them."""
        ...


class VectorStore(Protocol):
    """The index operations ingestion and retrieval need (met by storage.weaviate.WeaviateStore)."""

    async def upsert_chunks(self, chunks: Sequence[ChunkRecord], vectors: Sequence[Sequence[float]]) -> None:
        """Insert or replace chunks by id."""
        ...

    async def upsert_faq_questions(
        self, questions: Sequence[FaqQuestionRecord], vectors: Sequence[Sequence[float]]
    ) -> None:
        """Insert or replace FAQ question variants by id."""
        ...

    async def delete_ids(self, collection: Collection, object_ids: Sequence[str]) -> int:
        """Remove objects by id."""
        ...

    async def delete_document(self, kb_id: str, document_id: str) -> int:
        """Remove every chunk of a document."""
        ...

    async def delete_kb(self, kb_id: str) -> int:
        """Remove everything a knowledge base holds."""
        ...


class TableStore(Protocol):
    """Documents' rows as SQL tables (met by storage.tables.store.TableStore)."""

    async def write(self, kb_id: str, document_id: str, sheets: Sequence[Sheet], *, version: str) -> int:
        """Replace a document's tables (none: drop them) while `version` is its live one; how many were written."""
        ...

    async def drop_documents(self, document_ids: Sequence[str]) -> None:
        """Drop these documents' tables."""
        ...

    async def drop_kb(self, kb_id: str) -> None:
        """Drop a knowledge base's tables."""
        ...

    async def schemas(self, document_ids: Sequence[str], kb_ids: AbcCollection[str]) -> list[TableSchema]:
        """The tables of these documents in these knowledge bases, with sample rows."""
        ...

    async def run(self, sql: str, kb_ids: AbcCollection[str]) -> QueryResult:
        """Run one checked read-only SELECT over the tables of `kb_ids` (storage.tables.guard.RefusedQuery else)."""
        ...


Progress = Callable[[str, int, int], Awaitable[None]]
"""Called with (stage, done, total) as work advances."""


async def no_progress(stage: str, done: int, total: int) -> None:
    """A Progress that reports nowhere."""


class Reranker(Protocol):
    """Scores how well each text answers a query (a rerank API, or the local weighted scorer)."""

    @property
    def model_id(self) -> str:
        """The model's name, as stage notes and evaluations report it."""
        ...

    async def rerank(self, query: str, texts: Sequence[str], vectors: KnownVectors | None = None) -> list[float]:
        """One relevance score per text, in order, higher is better (ideally in [0, 1]); raises RerankerError.

        `vectors` are embeddings the caller already has; a reranker that compares embeddings uses them instead
        of embedding (or looking up) those texts again, and any other ignores them.
        """
        ...
