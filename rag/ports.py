"""Protocols rag consumes; lower layers and adapters satisfy them structurally."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Protocol

from rag.types import ChatMessage, Vector


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

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        """One vector per text, in order."""
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
