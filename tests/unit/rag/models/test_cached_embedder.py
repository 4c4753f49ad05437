"""CachedEmbedder: embeds only texts the cache lacks, once each, and keeps the caller's order."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from rag.models.embedders import CachedEmbedder, content_hash
from rag.ports import EmbedKind
from rag.types import Vector
from tests.support.memory_cache import MemoryCache


def _vector(text: str) -> Vector:
    """A vector that identifies its text, so a misplaced result is visible."""
    return [float(len(text)), float(sum(map(ord, text)))]


class CountingEmbedder:
    """Embedder that records every batch it is asked to embed."""

    def __init__(self, provider: str = "local", model_id: str = "mini") -> None:
        self.provider = provider
        self.model_id = model_id
        self.dimension = 2
        self.calls: list[list[str]] = []

    def prompt(self, kind: EmbedKind) -> str:
        return ""

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        self.calls.append(list(texts))
        return [_vector(text) for text in texts]


@pytest.fixture
def cache() -> MemoryCache:
    return MemoryCache()


@pytest.fixture
def inner() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def cached(inner: CountingEmbedder, cache: MemoryCache) -> CachedEmbedder:
    return CachedEmbedder(inner, cache)


def test_content_hash_is_sha256_of_utf8() -> None:
    assert content_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert content_hash("知识") != content_hash("知识 ")


def test_cached_embedder_reports_the_inner_model() -> None:
    cached = CachedEmbedder(CountingEmbedder(provider="openai", model_id="text-embedding-3-small"), MemoryCache())
    assert (cached.provider, cached.model_id, cached.dimension) == ("openai", "text-embedding-3-small", 2)


async def test_second_call_embeds_nothing_and_counts_hits(cached: CachedEmbedder, inner: CountingEmbedder) -> None:
    first = await cached.embed(["alpha", "beta"])
    second = await cached.embed(["alpha", "beta"])
    assert first == second == [_vector("alpha"), _vector("beta")]
    assert inner.calls == [["alpha", "beta"]]
    assert (cached.hits, cached.misses) == (2, 2)


async def test_vectors_are_stored_under_provider_model_and_content_hash(
    cached: CachedEmbedder, cache: MemoryCache
) -> None:
    await cached.embed(["alpha"])
    assert cache.vectors == {("local", "mini", content_hash("alpha")): _vector("alpha")}


async def test_vectors_are_filed_under_the_models_exact_name_when_given(inner: CountingEmbedder) -> None:
    cache = MemoryCache()
    cached = CachedEmbedder(inner, cache, cache_model="local-model@abcd1234")
    await cached.embed(["alpha"])
    assert [model for _, model, _ in cache.vectors] == ["local-model@abcd1234"]
    assert cached.model_id == inner.model_id


async def test_duplicate_texts_in_one_call_are_embedded_once(cached: CachedEmbedder, inner: CountingEmbedder) -> None:
    vectors = await cached.embed(["same", "other", "same"])
    assert inner.calls == [["same", "other"]]
    assert vectors == [_vector("same"), _vector("other"), _vector("same")]
    assert cached.misses == 2


async def test_order_is_kept_when_cached_and_new_texts_mix(cached: CachedEmbedder, inner: CountingEmbedder) -> None:
    await cached.embed(["b", "dd"])
    vectors = await cached.embed(["a", "b", "ccc", "dd"])
    assert inner.calls[-1] == ["a", "ccc"]
    assert vectors == [_vector("a"), _vector("b"), _vector("ccc"), _vector("dd")]
    assert (cached.hits, cached.misses) == (2, 4)


async def test_empty_input_embeds_nothing(cached: CachedEmbedder, inner: CountingEmbedder) -> None:
    assert await cached.embed([]) == []
    assert inner.calls == []


@pytest.mark.parametrize(
    ("provider", "model_id"),
    [("local", "other-model"), ("openai", "mini")],
    ids=["different model", "different provider"],
)
async def test_vectors_of_another_provider_or_model_are_not_reused(
    cached: CachedEmbedder, cache: MemoryCache, provider: str, model_id: str
) -> None:
    await cached.embed(["alpha"])
    other_inner = CountingEmbedder(provider=provider, model_id=model_id)
    other = CachedEmbedder(other_inner, cache)
    await other.embed(["alpha"])
    assert other_inner.calls == [["alpha"]]
    assert (other.hits, other.misses) == (0, 1)


async def test_a_question_is_embedded_once_and_never_stored(
    cached: CachedEmbedder, inner: CountingEmbedder, cache: MemoryCache
) -> None:
    [question] = await cached.transient.embed(["how long do refunds take?"])
    [again, passage] = await cached.embed(["how long do refunds take?", "Refunds take five days."])
    assert question == again == _vector("how long do refunds take?")
    assert passage == _vector("Refunds take five days.")
    assert inner.calls == [["how long do refunds take?"], ["Refunds take five days."]]
    assert set(cache.vectors) == {("local", "mini", content_hash("Refunds take five days."))}


async def test_recent_questions_are_forgotten_oldest_first(cached: CachedEmbedder, inner: CountingEmbedder) -> None:
    await cached.transient.embed(["first question"])
    await cached.transient.embed([f"question {n}" for n in range(1024)])
    await cached.transient.embed(["first question"])
    assert inner.calls[-1] == ["first question"]
    assert cached.transient.model_id == "mini"
    assert cached.transient.provider == "local"


class GatedEmbedder(CountingEmbedder):
    """Embeds at once, except a batch holding `gated`, which waits until `release` is set."""

    def __init__(self, gated: str) -> None:
        super().__init__()
        self.gated = gated
        self.waiting = asyncio.Event()
        self.release = asyncio.Event()

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        if self.gated in texts:
            self.waiting.set()
            await asyncio.wait_for(self.release.wait(), timeout=5)
        return await super().embed(texts, kind=kind)


async def test_a_question_whose_remembered_part_is_evicted_while_it_embeds_still_gets_every_vector() -> None:
    inner = GatedEmbedder(gated="new question")
    cached = CachedEmbedder(inner, MemoryCache(), recent=1)
    await cached.transient.embed(["known question"])
    # The first caller finds "known question" remembered and waits on the model for the other text ...
    first = asyncio.create_task(cached.transient.embed(["known question", "new question"]))
    await asyncio.wait_for(inner.waiting.wait(), timeout=5)
    # ... while another question pushes "known question" out of the one-entry memory.
    assert await cached.transient.embed(["another question"]) == [_vector("another question")]
    inner.release.set()
    assert await asyncio.wait_for(first, timeout=5) == [_vector("known question"), _vector("new question")]


class OddEmbedder(CountingEmbedder):
    """Vectors of doubles no float32 holds, so a remembered copy rounded on the way would differ."""

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        self.calls.append(list(texts))
        return [[0.1 + n / 3 for n in range(384)] for _ in texts]


async def test_a_remembered_question_comes_back_as_the_same_numbers_and_a_list_the_caller_owns() -> None:
    inner = OddEmbedder()
    cached = CachedEmbedder(inner, MemoryCache())
    [first] = await cached.transient.embed(["how long do refunds take?"])
    first.append(99.0)  # the caller's list is its own: changing it changes nothing remembered
    [again] = await cached.transient.embed(["how long do refunds take?"])
    assert type(again) is list
    assert again == [0.1 + n / 3 for n in range(384)]
    assert len(inner.calls) == 1
