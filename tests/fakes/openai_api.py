"""FakeOpenAI: a local OpenAI-compatible API (chat, embeddings, models) for the real openai client to talk to."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import re
import struct
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from aiohttp import web
from aiohttp.typedefs import Middleware
from multidict import CIMultiDict, CIMultiDictProxy

_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_MALFORMED_STREAM = web.RequestKey("malformed_stream", bool)


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the fake received it."""

    method: str
    path: str
    headers: Mapping[str, str]
    json: Any


@dataclass(frozen=True, slots=True)
class _Fail:
    status: int
    retry_after: float | None


@dataclass(frozen=True, slots=True)
class _Delay:
    seconds: float


@dataclass(frozen=True, slots=True)
class _MalformedStream:
    pass


_Fault = _Fail | _Delay | _MalformedStream


def fake_embedding(text: str, dimension: int = 8) -> list[float]:
    """The fake's vector for `text`: SHA-256 bytes mapped to [-1, 1), exact in float32."""
    digest = b"".join(hashlib.sha256(f"{block}:{text}".encode()).digest() for block in range(dimension // 32 + 1))
    return [byte / 128 - 1 for byte in digest[:dimension]]


class FakeOpenAI:
    """An aiohttp app on 127.0.0.1 speaking OpenAI's wire protocol, with auth, rate limits and scripted faults."""

    def __init__(
        self,
        *,
        api_key: str = "test-key",
        dimension: int = 8,
        rate_limit: tuple[int, float] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reply = "Hello from the fake model."
        self.requests: list[RecordedRequest] = []
        self._api_key = api_key
        self._dimension = dimension
        self._rate_limit = rate_limit
        self._clock = clock
        self._accepted: deque[float] = deque()
        self._faults: deque[_Fault] = deque()
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._ids = 0

    @property
    def base_url(self) -> str:
        """The URL to give the openai client, ending in /v1."""
        return f"http://127.0.0.1:{self._port}/v1"

    def fail_next(self, status: int, *, retry_after: float | None = None, times: int = 1) -> None:
        """Answer the next `times` requests with `status` and an OpenAI error body (and Retry-After if given)."""
        self._faults.extend(_Fail(status, retry_after) for _ in range(times))

    def delay_next(self, seconds: float) -> None:
        """Hold the next request for `seconds` (or until the fake closes) before answering it."""
        self._faults.append(_Delay(seconds))

    def malformed_stream_next(self) -> None:
        """Answer the next chat request with an event stream whose second event is not JSON."""
        self._faults.append(_MalformedStream())

    async def __aenter__(self) -> Self:
        app = web.Application(middlewares=[self._middleware()])
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)
        # Cancel a handler whose client hung up (as on a client timeout), so it never writes to a closed socket.
        self._runner = web.AppRunner(app, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = self._runner.addresses[0][1]
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closing.set()  # releases delayed handlers, so shutdown does not wait for them
        if self._runner is not None:
            await self._runner.cleanup()

    def _middleware(self) -> Middleware:
        @web.middleware
        async def guard(request: web.Request, handler: _Handler) -> web.StreamResponse:
            return await self._guard(request, handler)

        return guard

    async def _guard(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        try:
            body = await request.json() if request.can_read_body else None
        except ValueError:
            body = None
        self.requests.append(
            RecordedRequest(request.method, request.path, CIMultiDictProxy(CIMultiDict(request.headers)), body)
        )
        if request.headers.get("Authorization") != f"Bearer {self._api_key}":
            return _error(401, "Incorrect API key provided.")
        fault = self._faults.popleft() if self._faults else None
        if isinstance(fault, _Fail):
            return _error(fault.status, f"Scripted failure {fault.status}.", retry_after=fault.retry_after)
        if isinstance(fault, _Delay):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), fault.seconds)
        wait = self._rate_limit_wait()
        if wait is not None:
            return _error(429, "Rate limit reached for requests.", retry_after=wait)
        if body is None and request.method == "POST":
            return _error(400, "We could not parse the JSON body of your request.")
        request[_MALFORMED_STREAM] = isinstance(fault, _MalformedStream)
        return await handler(request)

    def _rate_limit_wait(self) -> float | None:
        """None when the request fits in the window (and is counted), else seconds until a slot frees."""
        if self._rate_limit is None:
            return None
        limit, window = self._rate_limit
        now = self._clock()
        while self._accepted and self._accepted[0] <= now - window:
            self._accepted.popleft()
        if len(self._accepted) >= limit:
            return self._accepted[0] + window - now
        self._accepted.append(now)
        return None

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self._ids += 1
        head = {"id": f"chatcmpl-fake{self._ids}", "created": int(time.time()), "model": body.get("model", "")}
        if not body.get("stream") and not request[_MALFORMED_STREAM]:
            words = sum(len(str(message.get("content", "")).split()) for message in body.get("messages", []))
            return web.json_response(
                {
                    **head,
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": self.reply},
                            "logprobs": None,
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": _usage(words, len(self.reply.split())),
                }
            )
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)

        async def send(delta: dict[str, str], finish_reason: str | None = None) -> None:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            chunk = {**head, "object": "chat.completion.chunk", "choices": [choice]}
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

        await send({"role": "assistant", "content": ""})
        if request[_MALFORMED_STREAM]:
            await response.write(b'data: {"choices": [\n\n')
        else:
            for delta in _deltas(self.reply):
                await send({"content": delta})
            await send({}, finish_reason="stop")
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(text, str) for text in texts):
            return _error(400, "'input' must be a string or a non-empty list of strings.")
        as_base64 = body.get("encoding_format") == "base64"  # the openai client asks for base64 by default
        data = []
        for index, text in enumerate(texts):
            vector = fake_embedding(text, self._dimension)
            encoded: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode() if as_base64 else vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(len(text.split()) for text in texts)
        return web.json_response(
            {"object": "list", "data": data, "model": body.get("model", ""), "usage": _usage(tokens, 0)}
        )

    async def _models(self, request: web.Request) -> web.StreamResponse:
        models = [{"id": name, "object": "model", "created": 0, "owned_by": "fake"} for name in ("chat", "embed")]
        return web.json_response({"object": "list", "data": models})


def _deltas(text: str) -> list[str]:
    """The reply cut before each word, so the pieces join back to it exactly."""
    return [piece for piece in re.split(r"(?<=\s)(?=\S)", text) if piece]


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _error(status: int, message: str, *, retry_after: float | None = None) -> web.Response:
    """An OpenAI-style error answer; the type and code follow what api.openai.com sends for that status."""
    if status == 401:
        kind, code = "invalid_request_error", "invalid_api_key"
    elif status == 429:
        kind, code = "requests", "rate_limit_exceeded"
    elif status >= 500:
        kind, code = "server_error", None
    else:
        kind, code = "invalid_request_error", None
    headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else None
    return web.json_response(
        {"error": {"message": message, "type": kind, "param": None, "code": code}}, status=status, headers=headers
    )
