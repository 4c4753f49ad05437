"""FakeRerankAPI: a local Jina/Cohere-compatible /rerank endpoint for rag.rerankers.ApiReranker to talk to."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from aiohttp import web
from aiohttp.typedefs import Middleware
from multidict import CIMultiDict, CIMultiDictProxy

from tests.fakes.openai_api import RecordedRequest

_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class _Fail:
    status: int
    retry_after: float | None


@dataclass(frozen=True, slots=True)
class _Delay:
    seconds: float


@dataclass(frozen=True, slots=True)
class _Raw:
    body: str


_Fault = _Fail | _Delay | _Raw


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.casefold()))


def overlap_score(query: str, document: str) -> float:
    """The fake's relevance: the share of the query's distinct words that the document contains, in [0, 1]."""
    query_words = _words(query)
    return len(query_words & _words(document)) / len(query_words) if query_words else 0.0


def _body_problem(body: Any) -> str | None:
    """What is wrong with a /rerank request body, as Jina and Cohere validate it; None when it is fine."""
    if not isinstance(body, dict):
        return "body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "'model' must be a non-empty string"
    if not isinstance(body.get("query"), str) or not body["query"]:
        return "'query' must be a non-empty string"
    documents = body.get("documents")
    if not isinstance(documents, list) or not documents or not all(isinstance(d, str) for d in documents):
        return "'documents' must be a non-empty list of strings"
    top_n = body.get("top_n", len(documents))
    if not isinstance(top_n, int) or isinstance(top_n, bool) or top_n < 1:
        return "'top_n' must be a positive integer"
    return None


class FakeRerankAPI:
    """An aiohttp app on 127.0.0.1 speaking the Jina/Cohere /rerank wire format, with auth and scripted faults."""

    def __init__(self, *, api_key: str = "test-key") -> None:
        self.requests: list[RecordedRequest] = []
        self._api_key = api_key
        self._faults: deque[_Fault] = deque()
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._port = 0

    @property
    def base_url(self) -> str:
        """The base URL to configure, ending in /v1 (the endpoint is {base_url}/rerank)."""
        return f"http://127.0.0.1:{self._port}/v1"

    def fail_next(self, status: int, *, retry_after: float | None = None, times: int = 1) -> None:
        """Answer the next `times` requests with `status` and an error body (and Retry-After if given)."""
        self._faults.extend(_Fail(status, retry_after) for _ in range(times))

    def delay_next(self, seconds: float) -> None:
        """Hold the next request for `seconds` (or until the fake closes) before answering it."""
        self._faults.append(_Delay(seconds))

    def answer_next_with(self, body: str) -> None:
        """Answer the next valid request 200 with exactly `body` as JSON content (for malformed answers)."""
        self._faults.append(_Raw(body))

    async def __aenter__(self) -> Self:
        app = web.Application(middlewares=[self._middleware()])
        app.router.add_post("/v1/rerank", self._rerank)
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
            return _error(401, "Invalid API key.")
        fault = self._faults.popleft() if self._faults else None
        if isinstance(fault, _Fail):
            return _error(fault.status, f"Scripted failure {fault.status}.", retry_after=fault.retry_after)
        if isinstance(fault, _Delay):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), fault.seconds)
        problem = _body_problem(body)
        if problem is not None:
            return _error(400, problem)
        if isinstance(fault, _Raw):
            return web.Response(text=fault.body, content_type="application/json")
        return await handler(request)

    async def _rerank(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        documents: list[str] = body["documents"]
        scored = sorted(
            ((index, overlap_score(body["query"], document)) for index, document in enumerate(documents)),
            key=lambda item: -item[1],
        )
        results = [
            {"index": index, "relevance_score": score, "document": {"text": documents[index]}}
            for index, score in scored[: body.get("top_n", len(documents))]
        ]
        tokens = sum(len(_words(text)) for text in [body["query"], *documents])
        return web.json_response({"model": body["model"], "usage": {"total_tokens": tokens}, "results": results})


def _error(status: int, message: str, *, retry_after: float | None = None) -> web.Response:
    """A Jina-style error answer (`{"detail": ...}`)."""
    headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else None
    return web.json_response({"detail": message}, status=status, headers=headers)
