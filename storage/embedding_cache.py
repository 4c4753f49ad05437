"""Embedding cache: vectors by (provider, model, content hash), shared across documents and restarts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from sqlalchemy import update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import col, select

from storage.db import Database
from storage.models import EmbeddingCacheEntry, utcnow

# Keeps every IN (...) list well under SQLite's 32766 bound-parameter limit.
_LOOKUP_BATCH = 500


class SqlEmbeddingCache:
    """The embedding_cache table behind rag's EmbeddingCache protocol."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get_many(self, provider: str, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        """The cached vectors among `hashes`, keyed by hash."""
        found: dict[str, list[float]] = {}
        unique = list(dict.fromkeys(hashes))
        async with self._db.session() as session:
            for start in range(0, len(unique), _LOOKUP_BATCH):
                batch = unique[start : start + _LOOKUP_BATCH]
                rows = await session.exec(
                    select(EmbeddingCacheEntry.content_hash, EmbeddingCacheEntry.vector).where(
                        EmbeddingCacheEntry.provider == provider,
                        EmbeddingCacheEntry.model == model,
                        col(EmbeddingCacheEntry.content_hash).in_(batch),
                    )
                )
                for content_hash, blob in rows:
                    found[content_hash] = np.frombuffer(blob, dtype=np.float32).tolist()
        return found

    async def put_many(self, provider: str, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Store vectors by hash; a hash already stored (by a concurrent writer too) is kept as is."""
        if not vectors:
            return
        rows = [
            {
                "provider": provider,
                "model": model,
                "content_hash": content_hash,
                "dimension": len(vector),
                "vector": np.asarray(vector, dtype=np.float32).tobytes(),
                "created_at": utcnow(),
            }
            for content_hash, vector in vectors.items()
        ]
        insert = postgresql.insert if not self._db.config.is_sqlite else sqlite.insert
        async with self._db.session() as session:
            for start in range(0, len(rows), _LOOKUP_BATCH):
                statement = insert(EmbeddingCacheEntry).values(rows[start : start + _LOOKUP_BATCH])
                await session.exec(
                    statement.on_conflict_do_nothing(index_elements=["provider", "model", "content_hash"])
                )

    async def adopt(self, provider: str, model: str, as_model: str) -> int:
        """File `model`'s vectors under `as_model` (the same model under the name that now identifies it); a vector
        already filed there stays. Returns how many moved."""
        taken = select(EmbeddingCacheEntry.content_hash).where(
            EmbeddingCacheEntry.provider == provider, EmbeddingCacheEntry.model == as_model
        )
        statement = (
            update(EmbeddingCacheEntry)
            .where(
                col(EmbeddingCacheEntry.provider) == provider,
                col(EmbeddingCacheEntry.model) == model,
                col(EmbeddingCacheEntry.content_hash).not_in(taken),
            )
            .values(model=as_model)
            .execution_options(synchronize_session=False)
        )
        async with self._db.session() as session:
            return int((await session.exec(statement)).rowcount)
