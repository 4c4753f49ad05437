"""FakeTelegramBotAPI: a local Telegram Bot API (methods, long polling, files, flood limits) for PTB to talk to."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from aiohttp import web

from fakes.base import Handler, Json
from fakes.telegram.flood import FLOODED, FloodControl
from fakes.telegram.methods import BotMethods
from fakes.telegram.records import BotRequest, Throttle
from fakes.telegram.state import DEFAULT_TOKEN
from fakes.telegram.updates import Updates
from fakes.telegram.wire import DEFAULT_DESCRIPTIONS, ApiError, WithDescription, read_params

_TOKEN = re.compile(r"\d+:[A-Za-z0-9_-]+")
_PARAMS = web.RequestKey("params", dict)
_METHOD = web.RequestKey("method", str)


@dataclass(frozen=True, slots=True)
class _Scripted:
    method: str | None  # lower-case Bot API method, or None for the next call of any method
    status: int
    description: str | None
    retry_after: int | None
    delay: float | None = None
    # A storm: every call (of `method`) until this time on the fake's clock is answered so, not only the next one.
    until: float | None = None


class FakeTelegramBotAPI(Updates, BotMethods):
    """An aiohttp app on 127.0.0.1 speaking the Telegram Bot API, with flood control, long polling and a transcript.

    Give PTB `base_url=fake.base_url` and `base_file_url=fake.base_file_url` (PTB appends the token).
    """

    def __init__(
        self,
        *,
        token: str = DEFAULT_TOKEN,
        username: str = "ragbot_test_bot",
        first_name: str = "RagBot",
        limits_on: bool = True,
        chat_interval: float = 1.0,
        chat_burst: int = 3,
        group_per_minute: int = 20,
        global_per_second: int = 30,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(token=token, username=username, first_name=first_name, clock=clock)
        self.limits_on = limits_on
        self.requests: list[BotRequest] = []  # type: ignore[assignment]  # Bot API calls, not raw HTTP requests
        self.throttled: list[Throttle] = []
        self._flood = FloodControl(
            chat_interval=chat_interval,
            chat_burst=chat_burst,
            group_per_minute=group_per_minute,
            global_per_second=global_per_second,
            clock=clock,
        )
        self._scripted: list[_Scripted] = []
        self._methods = self._handlers()

    # --- URLs and lifecycle -----------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The server's root, e.g. http://127.0.0.1:PORT."""
        return f"http://127.0.0.1:{self._port}"

    @property
    def base_url(self) -> str:
        """PTB's base_url: the token is appended to it."""
        return f"{self.url}/bot"

    @property
    def base_file_url(self) -> str:
        """PTB's base_file_url: the token is appended to it."""
        return f"{self.url}/file/bot"

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._poll is not None:
            self._poll.wake.set()  # a held getUpdates answers [] at once, so shutdown does not wait for its timeout
        await super().__aexit__(exc_type, exc, tb)

    def add_routes(self, app: web.Application) -> None:
        """Bot API methods, file downloads, and Telegram's 404 for anything else."""
        app.router.add_route("*", "/bot{token}/{method}", self._call)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        app.router.add_route("*", "/{tail:.*}", self._not_found)

    def error(self, status: int, message: str, *, retry_after: float | None = None) -> web.Response:
        """The Bot API's error envelope; a 429 carries parameters.retry_after in whole seconds."""
        body: Json = {"ok": False, "error_code": status, "description": message}
        if retry_after is not None:
            body["parameters"] = {"retry_after": max(1, math.ceil(retry_after))}
        return web.json_response(body, status=status)

    # --- Scripted faults --------------------------------------------------------------------------------------------

    def fail_next(
        self,
        status: int,
        *,
        retry_after: float | None = None,
        times: int = 1,
        method: str | None = None,
        description: str | None = None,
    ) -> None:
        """Answer the next `times` calls (of `method`, or of any method) with this error instead of handling them.

        A 429 says "Too Many Requests: retry after N" with parameters.retry_after N (default 1); a 403 defaults to
        "Forbidden: bot was kicked from the group chat".
        """
        wait = None if retry_after is None else max(1, math.ceil(retry_after))
        if status == 429 and wait is None:
            wait = 1
        target = method.lower() if method else None
        self._scripted.extend(_Scripted(target, status, description, wait) for _ in range(times))

    def storm(
        self, status: int, seconds: float, *, retry_after: float | None = None, method: str | None = None
    ) -> None:
        """Answer every call (of `method`, or of any method but file downloads) for the next `seconds` with this
        error, as during an outage or a flood: a 429 says retry after `retry_after` (default 1) each time."""
        wait = max(1, math.ceil(retry_after or 1)) if status == 429 else None
        target = method.lower() if method else None
        self._scripted.append(_Scripted(target, status, None, wait, until=self._clock() + seconds))

    def calm(self) -> None:
        """End every storm now (one-off faults still scripted stay)."""
        self._scripted = [fault for fault in self._scripted if fault.until is None]

    def delay_next(self, seconds: float, *, method: str | None = None) -> None:
        """Hold the next call (of `method`, or of any method) this long before handling it."""
        self._scripted.append(_Scripted(method.lower() if method else None, 0, None, None, delay=seconds))

    # --- Transcript -------------------------------------------------------------------------------------------------

    def calls(self, method: str) -> list[BotRequest]:
        """The recorded calls of one Bot API method."""
        return [request for request in self.requests if request.method.lower() == method.lower()]

    @property
    def rate_limited(self) -> int:
        """How many 429s the fake has answered (flood control and scripted)."""
        return len(self.throttled)

    # --- Request handling -------------------------------------------------------------------------------------------

    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Record the call, check the token in the path, apply scripted faults and flood control."""
        route = request.match_info
        is_file = request.path.startswith("/file/")
        try:
            params = {} if is_file else await read_params(request)
        except ApiError as exc:
            return self.error(exc.status, exc.description)
        method = "file" if is_file else route.get("method", "")
        request[_PARAMS] = params
        request[_METHOD] = method
        self.requests.append(
            BotRequest(method, params, self._clock(), request.method, request.path, request.content_type)
        )
        self._notify()
        token = route.get("token")
        if token is None:
            return await handler(request)
        if not _TOKEN.fullmatch(token):
            return self.error(404, "Not Found")
        if token != self.token:
            return self.error(401, "Unauthorized")
        if is_file:
            return await handler(request)
        key = method.lower()
        if key not in self._methods:
            return self.error(404, "Not Found: method not found")
        scripted = self._scripted_for(key)
        if scripted is not None:
            if scripted.delay is not None:
                await self._hold(scripted.delay)
            elif scripted.status == 429:
                wait = scripted.retry_after or 1
                self._throttle(method, params.get("chat_id"), "scripted", wait)
                return self.error(
                    429, scripted.description or f"Too Many Requests: retry after {wait}", retry_after=wait
                )
            else:
                description = scripted.description or DEFAULT_DESCRIPTIONS.get(scripted.status, "Scripted failure")
                return self.error(scripted.status, description)
        if self.limits_on and key in FLOODED:
            chat_id = params.get("chat_id")
            hit = self._flood.admit(chat_id if isinstance(chat_id, int | str) else None)
            if hit is not None:
                scope, wait = hit
                self._throttle(method, chat_id, scope, wait)
                return self.error(429, f"Too Many Requests: retry after {wait}", retry_after=wait)
        return await handler(request)

    def _scripted_for(self, method: str) -> _Scripted | None:
        """The scripted fault that answers a call of `method` now: a storm under way, else the next one-off (used)."""
        now = self._clock()
        self._scripted = [fault for fault in self._scripted if fault.until is None or fault.until > now]
        fault = next((fault for fault in self._scripted if fault.method in (None, method)), None)
        if fault is not None and fault.until is None:
            self._scripted.remove(fault)
        return fault

    def _throttle(self, method: str, chat_id: Any, scope: str, wait: int) -> None:
        self.throttled.append(Throttle(method, chat_id, scope, wait, self._clock()))
        self._notify()

    async def _call(self, request: web.Request) -> web.StreamResponse:
        handler = self._methods[request[_METHOD].lower()]
        try:
            result = await handler(request[_PARAMS])
        except ApiError as exc:
            body: Json = {"ok": False, "error_code": exc.status, "description": exc.description}
            if exc.parameters:
                body["parameters"] = exc.parameters
            return web.json_response(body, status=exc.status)
        finally:
            self._notify()
        if isinstance(result, WithDescription):
            return web.json_response({"ok": True, "result": result.result, "description": result.description})
        return web.json_response({"ok": True, "result": result})

    async def _download(self, request: web.Request) -> web.StreamResponse:
        stored = self._files.at_path(request.match_info["path"])
        if stored is None:
            return self.error(404, "Not Found")
        return web.Response(body=stored.data, content_type=stored.mime)

    async def _not_found(self, request: web.Request) -> web.StreamResponse:
        return self.error(404, "Not Found")
