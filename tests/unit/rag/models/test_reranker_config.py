"""Reranker configuration: validation, which reranker it builds, and where the API reranker posts."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rag.lexical import LexicalAnalyzer
from rag.models.rerankers import ApiReranker, LocalReranker, RerankerConfig, build_reranker, rerank_url
from rag.ports import EmbedKind
from rag.types import Vector


class NoEmbedder:
    """Our Embedder protocol; building a reranker must not call it."""

    provider = "none"
    model_id = "none"
    dimension = None

    def prompt(self, kind: EmbedKind) -> str:
        return ""

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        raise AssertionError("building a reranker must not embed")


def test_provider_none_builds_no_reranker() -> None:
    assert build_reranker(RerankerConfig(), NoEmbedder(), LexicalAnalyzer()) is None


def test_provider_local_builds_the_local_reranker() -> None:
    config = RerankerConfig(provider="local", lexical_weight=0.5, vector_weight=0.5)
    assert isinstance(build_reranker(config, NoEmbedder(), LexicalAnalyzer()), LocalReranker)


def test_provider_api_builds_the_api_reranker() -> None:
    config = RerankerConfig(provider="api", base_url="http://127.0.0.1:9/v1", model="jina-reranker-v2")
    reranker = build_reranker(config, NoEmbedder(), LexicalAnalyzer())
    assert isinstance(reranker, ApiReranker)
    assert reranker.model_id == "jina-reranker-v2"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"provider": "api", "model": "m"}, "base_url"),
        ({"provider": "api", "base_url": "http://x/v1"}, "model"),
        ({"lexical_weight": 0.5, "vector_weight": 0.4}, "sum to 1"),
        ({"timeout": 0.0}, "timeout"),
        ({"max_chars": 0}, "max_chars"),
    ],
    ids=["api-without-url", "api-without-model", "weights", "timeout", "max-chars"],
)
def test_reranker_config_rejects_what_cannot_work(config: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RerankerConfig(**config)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("https://api.jina.ai/v1", "https://api.jina.ai/v1/rerank"),
        ("https://api.cohere.com/v2/", "https://api.cohere.com/v2/rerank"),
        ("http://127.0.0.1:8000/rerank", "http://127.0.0.1:8000/rerank"),
        ("http://127.0.0.1:8000/v1/rerank/", "http://127.0.0.1:8000/v1/rerank"),
    ],
)
def test_rerank_url_appends_rerank_unless_it_is_already_there(base_url: str, expected: str) -> None:
    assert rerank_url(base_url) == expected
