"""FakeOpenAI's own contract: auth, rate limits, SSE framing, embeddings and request recording."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from fakes.openai_api import FakeOpenAI, StreamFaultKind, fake_embedding

AUTH = {"Authorization": "Bearer test-key"}
CHAT = {"model": "chat", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    """A running fake with default settings."""
    async with FakeOpenAI() as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    """A plain HTTP client, to see the wire format without the openai library in between."""
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong-key"}, {"Authorization": "test-key"}],
    ids=["missing", "wrong-key", "no-bearer"],
)
async def test_request_without_the_right_key_is_refused_with_401(
    fake: FakeOpenAI, http: aiohttp.ClientSession, headers: dict[str, str]
) -> None:
    async with http.get(f"{fake.base_url}/models", headers=headers) as response:
        body = await response.json()
    assert response.status == 401
    assert body["error"]["code"] == "invalid_api_key"
    assert set(body["error"]) >= {"message", "type", "code"}


async def test_models_lists_models_for_an_authorised_client(fake: FakeOpenAI, http: aiohttp.ClientSession) -> None:
    async with http.get(f"{fake.base_url}/models", headers=AUTH) as response:
        body = await response.json()
    assert response.status == 200
    assert body["object"] == "list"
    assert body["data"]


async def test_requests_past_the_rate_limit_get_429_with_retry_after(http: aiohttp.ClientSession) -> None:
    async with FakeOpenAI(rate_limit=(2, 60.0)) as fake:
        statuses = []
        for _ in range(3):
            async with http.post(f"{fake.base_url}/chat/completions", json=CHAT, headers=AUTH) as response:
                statuses.append(response.status)
                body = await response.json()
        assert statuses == [200, 200, 429]
        assert 0 < float(response.headers["retry-after"]) <= 60
        assert body["error"]["code"] == "rate_limit_exceeded"


async def test_rate_limit_frees_a_slot_once_the_window_has_passed(http: aiohttp.ClientSession) -> None:
    now = [0.0]
    async with FakeOpenAI(rate_limit=(1, 10.0), clock=lambda: now[0]) as fake:
        url = f"{fake.base_url}/models"
        async with http.get(url, headers=AUTH) as first, http.get(url, headers=AUTH) as second:
            assert (first.status, second.status) == (200, 429)
            assert float(second.headers["retry-after"]) == pytest.approx(10.0)
        now[0] = 10.0
        async with http.get(url, headers=AUTH) as third:
            assert third.status == 200


async def test_stream_is_sse_chunks_ending_with_done(fake: FakeOpenAI, http: aiohttp.ClientSession) -> None:
    fake.reply = "one two three"
    async with http.post(f"{fake.base_url}/chat/completions", json={**CHAT, "stream": True}, headers=AUTH) as response:
        text = await response.text()
    assert response.headers["Content-Type"].startswith("text/event-stream")
    events = text.split("\n\n")
    assert events[-2:] == ["data: [DONE]", ""]
    chunks = [json.loads(event.removeprefix("data: ")) for event in events[:-2]]
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert "".join(chunk["choices"][0]["delta"].get("content", "") for chunk in chunks) == "one two three"
    assert len(chunks) >= 5  # role, three words, finish
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


async def test_a_stream_asking_for_its_usage_ends_with_a_usage_chunk_without_choices(
    fake: FakeOpenAI, http: aiohttp.ClientSession
) -> None:
    fake.reply = "one two three"
    body = {**CHAT, "stream": True, "stream_options": {"include_usage": True}}
    async with http.post(f"{fake.base_url}/chat/completions", json=body, headers=AUTH) as response:
        events = (await response.text()).split("\n\n")
    usage = json.loads(events[-3].removeprefix("data: "))
    assert usage["choices"] == []
    assert usage["usage"]["completion_tokens"] == 3
    fake.refuse_stream_options = True
    async with http.post(f"{fake.base_url}/chat/completions", json=body, headers=AUTH) as refused:
        assert refused.status == 400
        assert "stream_options" in (await refused.json())["error"]["message"]


@pytest.mark.parametrize(
    ("kind", "tail"),
    [
        ("garbage", ["data: <html><body>502 Bad Gateway</body></html>", "data: [DONE]", ""]),
        ("cut", [""]),
    ],
)
async def test_a_stream_fault_breaks_the_stream_after_the_deltas_asked(
    fake: FakeOpenAI, http: aiohttp.ClientSession, kind: StreamFaultKind, tail: list[str]
) -> None:
    fake.reply = "one two three"
    fake.stream_fault_next(kind, after=1)
    async with http.post(f"{fake.base_url}/chat/completions", json={**CHAT, "stream": True}, headers=AUTH) as response:
        events = (await response.text()).split("\n\n")
    chunks = [json.loads(event.removeprefix("data: ")) for event in events[: -len(tail)]]
    assert "".join(chunk["choices"][0]["delta"].get("content", "") for chunk in chunks) == "one "
    assert all(chunk["choices"][0]["finish_reason"] is None for chunk in chunks)
    assert events[-len(tail) :] == tail


async def test_an_error_event_mid_stream_is_openais_error_object(fake: FakeOpenAI, http: aiohttp.ClientSession) -> None:
    fake.stream_fault_next("error", after=1)
    async with http.post(f"{fake.base_url}/chat/completions", json={**CHAT, "stream": True}, headers=AUTH) as response:
        events = (await response.text()).split("\n\n")
    assert "[DONE]" not in events[-2]
    error = json.loads(events[-2].removeprefix("data: "))["error"]
    assert error["type"] == "server_error"
    assert error["message"]


async def test_a_reset_stream_drops_the_connection_mid_body(fake: FakeOpenAI, http: aiohttp.ClientSession) -> None:
    fake.stream_fault_next("reset", after=1)
    async with http.post(f"{fake.base_url}/chat/completions", json={**CHAT, "stream": True}, headers=AUTH) as response:
        with pytest.raises(aiohttp.ClientPayloadError):
            await response.text()


async def test_completion_is_a_chat_completion_object(fake: FakeOpenAI, http: aiohttp.ClientSession) -> None:
    async with http.post(f"{fake.base_url}/chat/completions", json=CHAT, headers=AUTH) as response:
        body = await response.json()
    assert body["object"] == "chat.completion"
    assert body["model"] == "chat"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": fake.reply}
    assert body["choices"][0]["finish_reason"] == "stop"
    assert set(body["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}


@pytest.mark.parametrize(("text_input", "texts"), [("alpha", ["alpha"]), (["alpha", "beta"], ["alpha", "beta"])])
async def test_embeddings_are_deterministic_per_text_for_a_string_or_a_list(
    fake: FakeOpenAI, http: aiohttp.ClientSession, text_input: Any, texts: list[str]
) -> None:
    payload = {"model": "embed", "input": text_input, "encoding_format": "float"}
    async with http.post(f"{fake.base_url}/embeddings", json=payload, headers=AUTH) as response:
        body = await response.json()
    assert body["object"] == "list"
    assert [item["index"] for item in body["data"]] == list(range(len(texts)))
    assert [item["embedding"] for item in body["data"]] == [fake_embedding(text) for text in texts]


@pytest.mark.parametrize("bad_input", [None, [], [1, 2], ["ok", None]], ids=["absent", "empty", "tokens", "mixed"])
async def test_embeddings_refuse_input_that_is_not_text(
    fake: FakeOpenAI, http: aiohttp.ClientSession, bad_input: Any
) -> None:
    async with http.post(f"{fake.base_url}/embeddings", json={"model": "embed", "input": bad_input}, headers=AUTH) as r:
        assert r.status == 400


async def test_scripted_failure_answers_once_then_the_fake_recovers(
    fake: FakeOpenAI, http: aiohttp.ClientSession
) -> None:
    fake.fail_next(503, retry_after=0.5)
    url = f"{fake.base_url}/models"
    async with http.get(url, headers=AUTH) as failed, http.get(url, headers=AUTH) as recovered:
        assert failed.status == 503
        assert failed.headers["retry-after"] == "0.5"
        assert recovered.status == 200


async def test_every_request_is_recorded(fake: FakeOpenAI, http: aiohttp.ClientSession) -> None:
    async with http.post(f"{fake.base_url}/chat/completions", json=CHAT, headers=AUTH):
        pass
    async with http.get(f"{fake.base_url}/models"):
        pass
    assert [(seen.method, seen.path) for seen in fake.requests] == [
        ("POST", "/v1/chat/completions"),
        ("GET", "/v1/models"),
    ]
    assert fake.requests[0].json == CHAT
    assert fake.requests[0].headers["authorization"] == "Bearer test-key"


async def test_a_paced_stream_writes_one_word_per_tick_and_records_when(
    fake: FakeOpenAI, http: aiohttp.ClientSession
) -> None:
    fake.tokens_per_second = 50.0
    fake.reply_for = lambda body: f"echo {body['messages'][-1]['content']} done"
    async with http.post(f"{fake.base_url}/chat/completions", json={**CHAT, "stream": True}, headers=AUTH) as response:
        await response.text()
    (streamed,) = fake.streamed
    assert "".join(streamed.deltas) == f"echo {CHAT['messages'][-1]['content']} done"
    assert len(streamed.sent) == len(streamed.deltas)
    gaps = [later - earlier for earlier, later in zip(streamed.sent, streamed.sent[1:], strict=False)]
    assert min(gaps) >= 0.015  # paced at 50 a second (20 ms), not written at once
