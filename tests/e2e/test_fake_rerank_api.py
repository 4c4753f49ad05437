"""FakeRerankAPI's own contract: auth, request validation, the Jina/Cohere answer shape and scripted faults."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from fakes.rerank_api import FakeRerankAPI, overlap_score

AUTH = {"Authorization": "Bearer test-key"}
BODY = {"model": "m", "query": "red apples", "documents": ["green pears", "red apples", "red cars"]}


@pytest.fixture
async def fake() -> AsyncIterator[FakeRerankAPI]:
    """A running fake with default settings."""
    async with FakeRerankAPI() as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    """A plain HTTP client, to see the wire format with nothing in between."""
    async with aiohttp.ClientSession() as session:
        yield session


async def _post(http: aiohttp.ClientSession, fake: FakeRerankAPI, body: Any, **headers: str) -> tuple[int, Any]:
    async with http.post(f"{fake.base_url}/rerank", json=body, headers=headers or AUTH) as response:
        return response.status, await response.json()


async def test_results_are_best_first_with_index_score_and_document(
    fake: FakeRerankAPI, http: aiohttp.ClientSession
) -> None:
    status, body = await _post(http, fake, BODY)
    assert status == 200
    assert [r["index"] for r in body["results"]] == [1, 2, 0]
    assert [r["relevance_score"] for r in body["results"]] == [1.0, 0.5, 0.0]
    assert body["results"][0]["document"] == {"text": "red apples"}
    assert body["model"] == "m"


async def test_top_n_limits_the_results(fake: FakeRerankAPI, http: aiohttp.ClientSession) -> None:
    _, body = await _post(http, fake, {**BODY, "top_n": 1})
    assert [r["index"] for r in body["results"]] == [1]


@pytest.mark.parametrize(
    "headers", [{"Authorization": "Bearer wrong"}, {"Authorization": "test-key"}], ids=["wrong-key", "no-bearer"]
)
async def test_a_request_without_the_right_key_is_refused_with_401(
    fake: FakeRerankAPI, http: aiohttp.ClientSession, headers: dict[str, str]
) -> None:
    status, body = await _post(http, fake, BODY, **headers)
    assert status == 401
    assert "detail" in body


@pytest.mark.parametrize(
    "body",
    [
        [],
        {**BODY, "model": ""},
        {**BODY, "query": 3},
        {**BODY, "documents": []},
        {**BODY, "documents": ["a", {"text": "b"}]},
        {**BODY, "top_n": 0},
        {**BODY, "top_n": True},
    ],
    ids=[
        "not-an-object",
        "empty-model",
        "query-not-text",
        "no-documents",
        "document-not-text",
        "top-n-0",
        "top-n-bool",
    ],
)
async def test_a_bad_body_is_refused_with_400(fake: FakeRerankAPI, http: aiohttp.ClientSession, body: Any) -> None:
    status, answer = await _post(http, fake, body)
    assert status == 400
    assert answer["detail"]


async def test_scripted_failures_come_first_with_retry_after_then_normal_answers(
    fake: FakeRerankAPI, http: aiohttp.ClientSession
) -> None:
    fake.fail_next(429, retry_after=2)
    async with http.post(f"{fake.base_url}/rerank", json=BODY, headers=AUTH) as response:
        assert (response.status, response.headers["Retry-After"]) == (429, "2")
    status, _ = await _post(http, fake, BODY)
    assert status == 200


async def test_a_scripted_raw_answer_is_sent_as_is(fake: FakeRerankAPI, http: aiohttp.ClientSession) -> None:
    fake.answer_next_with("not json")
    async with http.post(f"{fake.base_url}/rerank", json=BODY, headers=AUTH) as response:
        assert (response.status, await response.text()) == (200, "not json")


async def test_every_request_is_recorded(fake: FakeRerankAPI, http: aiohttp.ClientSession) -> None:
    await _post(http, fake, BODY)
    await _post(http, fake, BODY, Authorization="Bearer wrong")
    assert [(r.path, r.json, r.headers["Authorization"]) for r in fake.requests] == [
        ("/v1/rerank", BODY, "Bearer test-key"),
        ("/v1/rerank", BODY, "Bearer wrong"),
    ]


@pytest.mark.parametrize(
    ("query", "document", "expected"),
    [("red apples", "Red, ripe APPLES.", 1.0), ("red apples", "red cars", 0.5), ("", "anything", 0.0)],
)
def test_overlap_score_is_the_share_of_query_words_found(query: str, document: str, expected: float) -> None:
    assert overlap_score(query, document) == expected
