"""The local ONNX embedder against the vectors sentence-transformers produced from the original weights."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rag.models.embedders import CachedEmbedder, OnnxEmbedder
from storage.db import Database
from storage.embedding_cache import SqlEmbeddingCache

# Vectors sentence-transformers produced from the original weights (encode(normalize_embeddings=True)).
REFERENCE = Path(__file__).resolve().parents[1] / "data" / "minilm_reference_embeddings.json"


def _reference() -> tuple[list[str], np.ndarray]:
    data = json.loads(REFERENCE.read_text())
    return data["texts"], np.asarray(data["embeddings"], dtype=np.float32)


async def test_reproduces_reference_embeddings(embedder: OnnxEmbedder) -> None:
    texts, expected = _reference()
    vectors = np.asarray(await embedder.embed(texts))
    assert vectors.shape == expected.shape == (len(texts), embedder.dimension)
    assert np.abs(vectors - expected).max() < 1e-5


async def test_order_is_kept_whatever_the_batching(model_dir: Path, embedder: OnnxEmbedder) -> None:
    texts, expected = _reference()
    texts, expected = texts[::-1] * 3, np.concatenate([expected[::-1]] * 3)
    small_batches = OnnxEmbedder(model_dir, model_id="m", batch_size=2)
    vectors = np.asarray(await small_batches.embed(texts))
    assert np.abs(vectors - expected).max() < 1e-5


async def test_long_text_is_truncated_at_256_word_pieces(embedder: OnnxEmbedder) -> None:
    # ~900 word pieces: everything past the 256th piece must not change the vector.
    long_text = " ".join(f"word{i} is followed by another" for i in range(150))
    tail_changed = long_text + " and a completely different ending about volcanoes"
    first, second = await embedder.embed([long_text, tail_changed])
    assert np.allclose(first, second, atol=1e-6)
    head, other_head = await embedder.embed(["volcanoes " + long_text, long_text])
    assert not np.allclose(head, other_head, atol=1e-3)


async def test_vectors_are_unit_length(embedder: OnnxEmbedder) -> None:
    vectors = np.asarray(await embedder.embed(["a", "检索增强生成", "x" * 3000]))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


async def test_cache_serves_the_second_request_without_embedding(db: Database, embedder: OnnxEmbedder) -> None:
    cached = CachedEmbedder(embedder, SqlEmbeddingCache(db))
    first = await cached.embed(["alpha", "beta", "alpha"])
    assert (cached.misses, cached.hits) == (2, 1)
    second = await cached.embed(["beta", "alpha"])
    assert (cached.misses, cached.hits) == (2, 3)
    assert np.allclose(second, [first[1], first[0]], atol=1e-6)
