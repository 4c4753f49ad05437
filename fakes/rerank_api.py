"""FakeRerankAPI: a local Jina/Cohere-compatible /rerank endpoint for rag.models.rerankers.ApiReranker to talk to."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from fakes.base import FakeAPI


@dataclass(frozen=True, slots=True)
class _Raw:
    body: str


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


class FakeRerankAPI(FakeAPI):
    """An aiohttp app on 127.0.0.1 speaking the Jina/Cohere /rerank wire format, with auth and scripted faults."""

    def answer_next_with(self, body: str) -> None:
        """Answer the next valid request 200 with exactly `body` as JSON content (for malformed answers)."""
        self._faults.append(_Raw(body))

    def add_routes(self, app: web.Application) -> None:
        """The one endpoint: {base_url}/rerank."""
        app.router.add_post("/v1/rerank", self._rerank)

    def error(self, status: int, message: str, *, retry_after: float | None = None) -> web.Response:
        """A Jina-style error answer."""
        return _error(status, message, retry_after=retry_after)

    async def admit(self, request: web.Request, body: Any, fault: object | None) -> web.StreamResponse | None:
        """The body check as Jina and Cohere do it, then a scripted raw answer if one is due."""
        problem = _body_problem(body)
        if problem is not None:
            return _error(400, problem)
        if isinstance(fault, _Raw):
            return web.Response(text=fault.body, content_type="application/json")
        return None

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
