"""What both search benchmarks index and ask: the mixed corpus, the questions, vectors from a pool of real ones."""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rag.models.embedders import OnnxEmbedder
from rag.ports import EmbedKind
from rag.types import Vector
from storage.records import SearchHit
from storage.weaviate.schema import Collection
from storage.weaviate.store import WeaviateStore

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
POOL = 2000
NOISE = 0.05


class PoolEmbedder:
    """Document vectors drawn from a pool of real embeddings, each with its own small, fixed noise."""

    provider = "local"
    model_id = MODEL_ID
    dimension = 384

    def __init__(self, pool: np.ndarray) -> None:
        self._pool = pool

    def prompt(self, kind: EmbedKind) -> str:
        return ""

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        vectors = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
            rng = np.random.default_rng(seed)
            vector = self._pool[seed % len(self._pool)] + rng.normal(0.0, NOISE, self._pool.shape[1])
            vectors.append((vector / np.linalg.norm(vector)).tolist())
        return vectors


def pool_vectors(pool: np.ndarray, rng: np.random.Generator, count: int) -> np.ndarray:
    """`count` unit vectors, each a random pool vector plus its own noise (as PoolEmbedder's, but all distinct)."""
    vectors = pool[rng.integers(0, len(pool), count)] + rng.normal(0.0, NOISE, (count, pool.shape[1]))
    normalized: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return normalized


class TimedIndex:
    """The store's searches, recording the wall time during which at least one search was in flight, and each
    search's own time by leg (vector, bm25, hybrid)."""

    def __init__(self, store: WeaviateStore) -> None:
        self._store = store
        self.intervals: list[tuple[float, float]] = []
        self.legs: dict[str, list[float]] = {}

    def in_flight(self) -> float:
        """Seconds covered by the recorded intervals (overlaps counted once), then forget them."""
        total, end = 0.0, float("-inf")
        for start, stop in sorted(self.intervals):
            if stop > end:
                total += stop - max(start, end)
                end = stop
        self.intervals.clear()
        return total

    def take_legs(self) -> dict[str, list[float]]:
        """Milliseconds of each search since the last take, by leg."""
        legs, self.legs = self.legs, {}
        return legs

    async def _timed(self, leg: str, call: Any) -> list[SearchHit]:
        start = time.perf_counter()
        try:
            result: list[SearchHit] = await call
            return result
        finally:
            stop = time.perf_counter()
            self.intervals.append((start, stop))
            self.legs.setdefault(leg, []).append((stop - start) * 1000)

    async def search_vector(
        self, collection: Collection, kb_ids: Sequence[str], vector: Sequence[float], limit: int
    ) -> list[SearchHit]:
        return await self._timed("vector", self._store.search_vector(collection, kb_ids, vector, limit))

    async def search_bm25(
        self, collection: Collection, kb_ids: Sequence[str], tokens: str, limit: int
    ) -> list[SearchHit]:
        return await self._timed("bm25", self._store.search_bm25(collection, kb_ids, tokens, limit))

    async def search_hybrid(self, *args: Any, **kwargs: Any) -> list[SearchHit]:
        return await self._timed("hybrid", self._store.search_hybrid(*args, **kwargs))


def corpus(eval_dir: Path) -> list[str]:
    """SciFact and CMRC 2018 texts interleaved, so an index of any size holds both languages."""
    english = [
        f"{row['title']}\n\n{row['text']}"
        for row in map(json.loads, (eval_dir / "scifact" / "corpus.jsonl").read_text(encoding="utf-8").splitlines())
    ]
    chinese = [
        f"{row.get('title') or ''}\n\n{row['text']}".strip()
        for row in map(json.loads, (eval_dir / "cmrc2018" / "corpus.jsonl").read_text(encoding="utf-8").splitlines())
    ]
    # CMRC passages are fewer and longer-lived in chunks: one for every four SciFact abstracts.
    mixed: list[str] = []
    for index, text in enumerate(english):
        mixed.append(text)
        if index % 4 == 3 and chinese:
            mixed.append(chinese[(index // 4) % len(chinese)])
    return mixed


def questions(eval_dir: Path, count: int) -> list[str]:
    """`count` DEV questions, half SciFact and half CMRC 2018, in a fixed shuffled order."""
    rows: list[str] = []
    for name in ("scifact", "cmrc2018"):
        lines = (eval_dir / name / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        rows.extend(str(json.loads(line)["text"]) for line in lines[: count // 2])
    random.Random(20261122).shuffle(rows)
    return rows


async def real_vectors(
    model: OnnxEmbedder, passages: list[str], queries: list[str], cache: Path | None
) -> tuple[np.ndarray, dict[str, Vector]]:
    """The pool (the passages' real embeddings, read from `cache` when it holds these passages') and each query's."""
    digest = hashlib.sha256(json.dumps([MODEL_ID, passages]).encode()).hexdigest()
    pool: np.ndarray | None = None
    if cache is not None and cache.exists():
        with np.load(cache) as saved:
            if str(saved["digest"]) == digest:
                print(f"pool vectors read from {cache}", flush=True)
                pool = saved["pool"]
    if pool is None:
        print(f"embedding a pool of {len(passages)} passages with the real model", flush=True)
        pool = np.array(await model.embed(passages))
        if cache is not None:
            with cache.open("wb") as file:
                np.savez(file, digest=np.array(digest), pool=pool)
    return pool, dict(zip(queries, await model.embed(queries), strict=True))
