"""FakeWebSearch: a loopback aiohttp server speaking DuckDuckGo's and Google's search formats, serving pages too.

Each search endpoint has a mode: `ok`, `slow` (holds the request until the fake closes: the client times out),
`429` (rate limited, with Retry-After), `garbage` (200 with a body the provider never sends), `many` (10,000
results) and `huge` (a 50 MB body, streamed).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal, Self

from aiohttp import web

from fakes.base import start_local
from fakes.web_search.formats import GARBAGE_HTML_PAGES, Hit, google_error, google_search, instant_answer, results_page

Mode = Literal["ok", "slow", "429", "garbage", "many", "huge"]
Endpoint = Literal["html", "instant_answer", "google"]

MANY = 10_000
HUGE_BYTES = 50 * 1000 * 1000
_CHUNK = b"<!-- padding -->" * 4096
GARBAGE_HTML = GARBAGE_HTML_PAGES[0]
RETRY_AFTER = "30"


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search the fake answered: which endpoint, and its query parameters."""

    endpoint: Endpoint
    params: Mapping[str, str]


@dataclass(slots=True)
class _State:
    hits: list[Hit] = field(default_factory=list)
    modes: dict[Endpoint, Mode] = field(default_factory=lambda: {"html": "ok", "instant_answer": "ok", "google": "ok"})
    pages: dict[str, str] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)


class FakeWebSearch:
    """The search providers and the pages their results link to, on 127.0.0.1."""

    def __init__(self, *, api_key: str = "test-key", engine_id: str = "test-cx") -> None:
        self.api_key = api_key
        self.engine_id = engine_id
        self.searches: list[SearchRequest] = []
        self.page_requests: list[str] = []
        self._state = _State()
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._port = 0

    @property
    def base(self) -> str:
        """The server's root URL."""
        return f"http://127.0.0.1:{self._port}"

    @property
    def html_url(self) -> str:
        """DuckDuckGo's HTML results page."""
        return f"{self.base}/html/"

    @property
    def instant_answer_url(self) -> str:
        """DuckDuckGo's Instant Answer API."""
        return f"{self.base}/ia/"

    @property
    def google_url(self) -> str:
        """Google's Custom Search JSON API."""
        return f"{self.base}/customsearch/v1"

    def page_url(self, name: str) -> str:
        """The address of a page served with `serve_page` (or of a redirect made with `redirect`)."""
        return f"{self.base}/page/{name}"

    def serve(self, hits: Sequence[Hit]) -> None:
        """Answer every search with these results."""
        self._state.hits = list(hits)

    def serve_page(self, name: str, markup: str) -> None:
        """Serve `markup` as text/html at page_url(name)."""
        self._state.pages[name] = markup

    def redirect(self, name: str, location: str) -> None:
        """Answer page_url(name) with a 302 to `location`."""
        self._state.redirects[name] = location

    def set_mode(self, mode: Mode, *endpoints: Endpoint) -> None:
        """How the given endpoints (all when none is named) answer from now on."""
        for endpoint in endpoints or ("html", "instant_answer", "google"):
            self._state.modes[endpoint] = mode

    def searched(self, endpoint: Endpoint) -> list[SearchRequest]:
        """The searches one endpoint answered."""
        return [search for search in self.searches if search.endpoint == endpoint]

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_route("*", "/html/", self._html)
        app.router.add_get("/ia/", self._instant_answer)
        app.router.add_get("/customsearch/v1", self._google)
        app.router.add_get("/page/{name}", self._page)
        self._runner, self._port = await start_local(app)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    def _hits(self, mode: Mode) -> list[Hit]:
        if mode == "many":
            return [Hit(f"https://site{n}.example.com/p{n}", f"Result {n}", f"Snippet {n}.") for n in range(MANY)]
        return self._state.hits

    async def _fault(self, request: web.Request, mode: Mode, content_type: str) -> web.StreamResponse | None:
        if mode == "slow":
            await self._closing.wait()
            return web.Response(status=504)
        if mode == "429":
            return web.Response(status=429, headers={"Retry-After": RETRY_AFTER}, text="Too Many Requests")
        if mode == "huge":
            response = web.StreamResponse(headers={"Content-Type": content_type})
            await response.prepare(request)
            sent = 0
            while sent < HUGE_BYTES:
                await response.write(_CHUNK)
                sent += len(_CHUNK)
            await response.write_eof()
            return response
        return None

    async def _html(self, request: web.Request) -> web.StreamResponse:
        params = dict(request.query)
        if request.method == "POST":  # DuckDuckGo's own form posts q
            params |= {key: str(value) for key, value in (await request.post()).items()}
        self.searches.append(SearchRequest("html", params))
        mode = self._state.modes["html"]
        if (fault := await self._fault(request, mode, "text/html; charset=UTF-8")) is not None:
            return fault
        if mode == "garbage":
            return web.Response(text=GARBAGE_HTML, content_type="text/html", charset="utf-8")
        return web.Response(
            text=results_page(params.get("q", ""), self._hits(mode)), content_type="text/html", charset="utf-8"
        )

    async def _instant_answer(self, request: web.Request) -> web.StreamResponse:
        self.searches.append(SearchRequest("instant_answer", dict(request.query)))
        mode = self._state.modes["instant_answer"]
        if (fault := await self._fault(request, mode, "application/x-javascript")) is not None:
            return fault
        if mode == "garbage":
            return web.Response(text=GARBAGE_HTML, content_type="text/html")
        # DuckDuckGo serves this JSON as application/x-javascript.
        body = json.dumps(instant_answer(self._hits(mode)))
        return web.Response(text=body, content_type="application/x-javascript")

    async def _google(self, request: web.Request) -> web.StreamResponse:
        self.searches.append(SearchRequest("google", dict(request.query)))
        if request.query.get("key") != self.api_key:
            return web.json_response(
                google_error(400, "API key not valid. Please pass a valid API key.", "badRequest"), status=400
            )
        if request.query.get("cx") != self.engine_id:
            return web.json_response(
                google_error(400, "Request contains an invalid argument.", "badRequest"), status=400
            )
        mode = self._state.modes["google"]
        if mode == "429":
            body = google_error(429, "Quota exceeded for quota metric 'Queries'.", "rateLimitExceeded")
            return web.json_response(body, status=429, headers={"Retry-After": RETRY_AFTER})
        if (fault := await self._fault(request, mode, "application/json; charset=UTF-8")) is not None:
            return fault
        if mode == "garbage":
            return web.Response(text=GARBAGE_HTML, content_type="text/html")
        hits = self._hits(mode)
        return web.json_response(google_search(request.query.get("q", ""), self.engine_id, hits))

    async def _page(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        self.page_requests.append(name)
        if name in self._state.redirects:
            raise web.HTTPFound(self._state.redirects[name])
        if name.startswith("login"):
            markup = "<html><body><form action='/login'>Sign in to continue</form></body></html>"
            return web.Response(status=401, text=markup, content_type="text/html")
        if name not in self._state.pages:
            raise web.HTTPNotFound()
        return web.Response(text=self._state.pages[name], content_type="text/html", charset="utf-8")
