"""Our EmbeddingCache protocol in memory, for tests of the cached embedders."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


class MemoryCache:
    """EmbeddingCache kept in a dict keyed by (provider, model, hash)."""

    def __init__(self) -> None:
        self.vectors: dict[tuple[str, str, str], list[float]] = {}

    async def get_many(self, provider: str, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        return {h: self.vectors[(provider, model, h)] for h in hashes if (provider, model, h) in self.vectors}

    async def put_many(self, provider: str, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        for digest, vector in vectors.items():
            self.vectors[(provider, model, digest)] = list(vector)
