"""ApiReranker over real aiohttp against FakeRerankAPI: scores, what was sent, and every failure as RerankerError."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from fakes.rerank_api import FakeRerankAPI, overlap_score
from rag.errors import RerankerError
from rag.lexical import LexicalAnalyzer
from rag.models.rerankers import ApiReranker, RerankerConfig
from rag.pipeline import TurnContext
from rag.stages.rerank import Rerank
from rag.types import Candidate

QUERY = "how long do refunds take"
TEXTS = ["the office opens at nine", "how long refunds take: fourteen days", "how long is the warranty"]


class RecordingSleep:
    """An injected sleep that records the wait instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
async def fake() -> AsyncIterator[FakeRerankAPI]:
    """A running fake with default settings."""
    async with FakeRerankAPI() as running:
        yield running


@pytest.fixture
def sleep() -> RecordingSleep:
    """The reranker's sleep, recorded."""
    return RecordingSleep()


def _config(fake: FakeRerankAPI, **overrides: object) -> RerankerConfig:
    values: dict[str, object] = {
        "provider": "api",
        "base_url": fake.base_url,
        "api_key": "test-key",
        "model": "fake-reranker",
        "timeout": 5.0,
        **overrides,
    }
    return RerankerConfig(**values)  # type: ignore[arg-type]


@pytest.fixture
async def reranker(fake: FakeRerankAPI, sleep: RecordingSleep) -> AsyncIterator[ApiReranker]:
    """An ApiReranker pointed at the fake."""
    client = ApiReranker(_config(fake), sleep=sleep)
    yield client
    await client.close()


async def test_scores_come_back_in_document_order(fake: FakeRerankAPI, reranker: ApiReranker) -> None:
    scores = await reranker.rerank(QUERY, TEXTS)
    # The fake answers best first, so this also checks the reranker puts them back by index.
    assert scores == [overlap_score(QUERY, text) for text in TEXTS]
    assert scores[1] > scores[2] > scores[0]


async def test_the_request_carries_model_query_documents_top_n_and_bearer_key(
    fake: FakeRerankAPI, reranker: ApiReranker
) -> None:
    await reranker.rerank(QUERY, TEXTS)
    (request,) = fake.requests
    assert (request.method, request.path) == ("POST", "/v1/rerank")
    assert request.headers["Authorization"] == "Bearer test-key"
    assert request.json == {"model": "fake-reranker", "query": QUERY, "documents": TEXTS, "top_n": 3}


async def test_a_base_url_that_already_ends_in_rerank_is_used_as_is(fake: FakeRerankAPI) -> None:
    client = ApiReranker(_config(fake, base_url=f"{fake.base_url}/rerank"))
    try:
        assert len(await client.rerank(QUERY, TEXTS)) == 3
    finally:
        await client.close()
    assert [r.path for r in fake.requests] == ["/v1/rerank"]


async def test_long_documents_are_truncated_before_sending(fake: FakeRerankAPI) -> None:
    client = ApiReranker(_config(fake, max_chars=8))
    try:
        await client.rerank(QUERY, ["refunds take fourteen days", "short"])
    finally:
        await client.close()
    assert fake.requests[0].json["documents"] == ["refunds ", "short"]


async def test_no_texts_send_no_request(fake: FakeRerankAPI, reranker: ApiReranker) -> None:
    assert await reranker.rerank(QUERY, []) == []
    assert fake.requests == []


async def test_a_short_429_is_retried_once_after_the_servers_retry_after(
    fake: FakeRerankAPI, reranker: ApiReranker, sleep: RecordingSleep
) -> None:
    fake.fail_next(429, retry_after=1.5)
    assert len(await reranker.rerank(QUERY, TEXTS)) == 3
    assert sleep.waits == [1.5]
    assert len(fake.requests) == 2


async def test_a_second_429_is_raised_with_its_retry_after(
    fake: FakeRerankAPI, reranker: ApiReranker, sleep: RecordingSleep
) -> None:
    fake.fail_next(429, retry_after=1, times=2)
    with pytest.raises(RerankerError) as caught:
        await reranker.rerank(QUERY, TEXTS)
    assert (caught.value.status, caught.value.retry_after) == (429, 1.0)
    assert len(fake.requests) == 2


@pytest.mark.parametrize("retry_after", [30.0, None], ids=["too-long", "missing"])
async def test_a_429_without_a_short_retry_after_is_raised_at_once(
    fake: FakeRerankAPI, reranker: ApiReranker, sleep: RecordingSleep, retry_after: float | None
) -> None:
    fake.fail_next(429, retry_after=retry_after)
    with pytest.raises(RerankerError) as caught:
        await reranker.rerank(QUERY, TEXTS)
    assert (caught.value.status, caught.value.retry_after) == (429, retry_after)
    assert sleep.waits == []
    assert len(fake.requests) == 1


@pytest.mark.parametrize("status", [400, 500, 503])
async def test_an_error_status_is_raised_with_the_status_and_the_servers_message(
    fake: FakeRerankAPI, reranker: ApiReranker, status: int
) -> None:
    fake.fail_next(status)
    with pytest.raises(RerankerError, match=f"answered {status}.*Scripted failure") as caught:
        await reranker.rerank(QUERY, TEXTS)
    assert caught.value.status == status
    assert len(fake.requests) == 1


async def test_a_wrong_api_key_is_raised_as_401(fake: FakeRerankAPI) -> None:
    client = ApiReranker(_config(fake, api_key="wrong-key"))
    try:
        with pytest.raises(RerankerError) as caught:
            await client.rerank(QUERY, TEXTS)
    finally:
        await client.close()
    assert caught.value.status == 401
    assert "wrong-key" not in str(caught.value)


async def test_an_answer_slower_than_the_timeout_is_raised(fake: FakeRerankAPI) -> None:
    fake.delay_next(5.0)
    client = ApiReranker(_config(fake, timeout=0.3))
    try:
        with pytest.raises(RerankerError, match=r"timed out after 0\.3s"):
            await client.rerank(QUERY, TEXTS)
    finally:
        await client.close()


async def test_an_unreachable_server_is_raised() -> None:
    async with FakeRerankAPI() as gone:
        config = _config(gone)
    client = ApiReranker(config)
    try:
        with pytest.raises(RerankerError, match="request failed"):
            await client.rerank(QUERY, TEXTS)
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("<html>bad gateway</html>", "not JSON"),
        ('{"data": []}', "no 'results' list"),
        ('[{"index": 0, "relevance_score": 0.5}]', "no 'results' list"),
        ('{"results": [{"index": 0, "relevance_score": 0.5}, {"index": 1, "relevance_score": 0.5}]}', "left out"),
        (
            '{"results": [{"index": 0, "relevance_score": 0.1}, {"index": 0, "relevance_score": 0.2}, '
            '{"index": 1, "relevance_score": 0.3}]}',
            "index 0",
        ),
        ('{"results": [{"index": 3, "relevance_score": 0.5}]}', "index 3"),
        ('{"results": [{"index": -1, "relevance_score": 0.5}]}', "index -1"),
        ('{"results": [{"index": "0", "relevance_score": 0.5}]}', "index '0'"),
        ('{"results": [{"index": 0, "relevance_score": "high"}]}', "relevance_score 'high'"),
        ('{"results": [{"index": 0, "relevance_score": NaN}]}', "relevance_score nan"),
        ('{"results": [{"index": 0}]}', "relevance_score None"),
    ],
    ids=[
        "not-json",
        "no-results",
        "bare-list",
        "missing-index",
        "duplicate-index",
        "index-out-of-range",
        "negative-index",
        "string-index",
        "string-score",
        "nan-score",
        "no-score",
    ],
)
async def test_a_malformed_answer_is_raised(
    fake: FakeRerankAPI, reranker: ApiReranker, body: str, message: str
) -> None:
    fake.answer_next_with(body)
    with pytest.raises(RerankerError, match=message):
        await reranker.rerank(QUERY, TEXTS)


async def test_close_is_safe_twice_and_before_any_request(fake: FakeRerankAPI) -> None:
    client = ApiReranker(_config(fake))
    await client.close()
    await client.rerank(QUERY, TEXTS)
    await client.close()
    await client.close()


async def test_the_rerank_stage_goes_on_without_reranking_when_the_api_fails(
    fake: FakeRerankAPI, reranker: ApiReranker
) -> None:
    fake.fail_next(500)
    candidates = [Candidate(id=str(i), kind="chunk", kb_id="kb", text=text, score=0.1) for i, text in enumerate(TEXTS)]
    turn = TurnContext(query=QUERY, kb_ids=("kb",), candidates=candidates)
    note = await Rerank(reranker, LexicalAnalyzer()).run(turn)
    assert note == "skipped=reranker_error"
    assert (turn.reranked, turn.candidates) == ([], candidates)


async def test_the_rerank_stage_keeps_what_the_api_finds_relevant(fake: FakeRerankAPI, reranker: ApiReranker) -> None:
    candidates = [Candidate(id=str(i), kind="chunk", kb_id="kb", text=text, score=0.1) for i, text in enumerate(TEXTS)]
    turn = TurnContext(query=QUERY, kb_ids=("kb",), candidates=candidates)
    note = await Rerank(reranker, LexicalAnalyzer()).run(turn)
    assert [c.id for c in turn.reranked] == ["1"]
    assert note == "model=fake-reranker threshold=0.5 kept=1 out=1"
