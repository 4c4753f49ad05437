"""CachedEmbedder with query and passage prompts: vectors are keyed on the prompt the model actually reads."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rag.models.embedders import CachedEmbedder, content_hash
from rag.models.model_folder import Prompts
from rag.ports import EmbedKind
from rag.types import Vector
from tests.support.memory_cache import MemoryCache


class PromptedEmbedder:
    """Our Embedder protocol with prompts: a vector that identifies the prompted text, recording each call."""

    provider = "local"
    model_id = "e5"
    dimension = 2

    def __init__(self, prompts: Prompts) -> None:
        self.prompts = prompts
        self.calls: list[tuple[EmbedKind, list[str]]] = []

    def prompt(self, kind: EmbedKind) -> str:
        return self.prompts.of(kind)

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        self.calls.append((kind, list(texts)))
        return [
            [float(len(self.prompt(kind) + text)), float(sum(map(ord, self.prompt(kind) + text)))] for text in texts
        ]


E5 = Prompts(query="query: ", passage="passage: ")


async def test_a_query_and_a_passage_of_the_same_words_are_embedded_apart_when_prompts_differ() -> None:
    inner, cache = PromptedEmbedder(E5), MemoryCache()
    cached = CachedEmbedder(inner, cache)
    [query] = await cached.transient.embed(["refund policy"], kind="query")
    [passage] = await cached.embed(["refund policy"])
    assert query != passage
    assert inner.calls == [("query", ["refund policy"]), ("passage", ["refund policy"])]
    assert set(cache.vectors) == {("local", "e5", content_hash("passage: refund policy"))}


async def test_the_query_vector_is_reused_for_the_same_kind_only() -> None:
    inner = PromptedEmbedder(E5)
    cached = CachedEmbedder(inner, MemoryCache())
    await cached.transient.embed(["refund policy"], kind="query")
    await cached.embed(["refund policy"], kind="query")
    assert inner.calls == [("query", ["refund policy"])]
    assert cached.hits == 1


@pytest.mark.parametrize("prompts", [Prompts(), Prompts(query="same: ", passage="same: ")], ids=["none", "equal"])
async def test_a_query_and_a_passage_share_one_vector_when_prompted_alike(prompts: Prompts) -> None:
    inner = PromptedEmbedder(prompts)
    cached = CachedEmbedder(inner, MemoryCache())
    [query] = await cached.transient.embed(["refund policy"], kind="query")
    [passage] = await cached.embed(["refund policy"])
    assert query == passage
    assert inner.calls == [("query", ["refund policy"])]


async def test_passages_stay_under_the_plain_hash_when_the_model_has_no_prompts() -> None:
    # Vectors cached before prompts were read stay valid for a model without prompts.
    cache = MemoryCache()
    await CachedEmbedder(PromptedEmbedder(Prompts()), cache).embed(["alpha"])
    assert set(cache.vectors) == {("local", "e5", content_hash("alpha"))}


def test_the_wrappers_report_the_inner_prompts() -> None:
    cached = CachedEmbedder(PromptedEmbedder(E5), MemoryCache())
    assert (cached.prompt("query"), cached.transient.prompt("passage")) == ("query: ", "passage: ")
