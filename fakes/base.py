"""What every local fake API shares: a loopback aiohttp server, a request log, Bearer auth, scripted faults, waiting."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from aiohttp import web
from aiohttp.typedefs import Middleware
from multidict import CIMultiDict, CIMultiDictProxy

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# A JSON object as the fakes read and write them.
Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the fake received it."""

    method: str
    path: str
    headers: Mapping[str, str]
    json: Any


@dataclass(frozen=True, slots=True)
class Fail:
    """Answer with this status (and Retry-After when given) instead of handling the request."""

    status: int
    retry_after: float | None


@dataclass(frozen=True, slots=True)
class Delay:
    """Hold the request this long (or until the fake closes) before handling it."""

    seconds: float


class FakeAPI:
    """Base of the fakes: subclasses add their routes, their error body and any fault of their own."""

    auth_error = "Invalid API key."
    # The largest request body the fake's server reads (aiohttp's own default); a fake of an upload API raises it.
    max_body = 1024**2

    def __init__(self, *, api_key: str = "test-key") -> None:
        self.requests: list[RecordedRequest] = []
        self._api_key = api_key
        self._faults: deque[object] = deque()
        self._closing = asyncio.Event()
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._port = 0

    @property
    def base_url(self) -> str:
        """The URL to give a client, ending in /v1."""
        return f"http://127.0.0.1:{self._port}/v1"

    def fail_next(self, status: int, *, retry_after: float | None = None, times: int = 1) -> None:
        """Answer the next `times` requests with `status` and an error body (and Retry-After if given)."""
        self._faults.extend(Fail(status, retry_after) for _ in range(times))

    def delay_next(self, seconds: float) -> None:
        """Hold the next request for `seconds` (or until the fake closes) before answering it."""
        self._faults.append(Delay(seconds))

    # A timeout argument reads best in tests (`await fake.wait_for(pred, timeout=5)`); it is asyncio.timeout inside.
    async def wait_for(self, predicate: Callable[[], object], timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Return once `predicate()` is truthy, checked again on every change the fake sees; TimeoutError after."""
        try:
            async with asyncio.timeout(timeout):
                while True:
                    changed = self._changed
                    if predicate():
                        return
                    await changed.wait()
        except TimeoutError as exc:
            calls = ", ".join(request.method for request in self.requests[-10:])
            exc.add_note(f"{type(self).__name__}: condition not met after {timeout}s; last calls: {calls}")
            raise

    def _notify(self) -> None:
        """Wake every wait_for: the fake's state has changed."""
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def _hold(self, seconds: float) -> None:
        """Wait `seconds`, or less if the fake closes meanwhile (so shutdown does not wait for a scripted delay)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closing.wait(), seconds)

    def add_routes(self, app: web.Application) -> None:
        """Register the fake's endpoints."""
        raise NotImplementedError

    def error(self, status: int, message: str, *, retry_after: float | None = None) -> web.Response:
        """An error answer in the real API's shape."""
        raise NotImplementedError

    async def admit(self, request: web.Request, body: Any, fault: object | None) -> web.StreamResponse | None:
        """After auth and the common faults: an answer that replaces the handler's, or None to handle the request."""
        return None

    async def __aenter__(self) -> Self:
        app = web.Application(middlewares=[self._middleware()], client_max_size=self.max_body)
        self.add_routes(app)
        self._runner, self._port = await start_local(app)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closing.set()  # releases delayed handlers, so shutdown does not wait for them
        if self._runner is not None:
            await self._runner.cleanup()

    def _middleware(self) -> Middleware:
        @web.middleware
        async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
            return await self._guard(request, handler)

        return guard

    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            # A multipart upload is left unread for its handler (reading it here would consume it).
            multipart = request.content_type.startswith("multipart/")
            body = await request.json() if request.can_read_body and not multipart else None
        except ValueError:
            body = None
        self.requests.append(
            RecordedRequest(request.method, request.path, CIMultiDictProxy(CIMultiDict(request.headers)), body)
        )
        self._notify()
        if request.headers.get("Authorization") != f"Bearer {self._api_key}":
            return self.error(401, self.auth_error)
        fault = self._faults.popleft() if self._faults else None
        if isinstance(fault, Fail):
            return self.error(fault.status, f"Scripted failure {fault.status}.", retry_after=fault.retry_after)
        if isinstance(fault, Delay):
            await self._hold(fault.seconds)
        answer = await self.admit(request, body, fault)
        return answer if answer is not None else await handler(request)


async def start_local(app: web.Application) -> tuple[web.AppRunner, int]:
    """Serve `app` on a free loopback port: its runner (clean it up when done) and the port."""
    # Cancel a handler whose client hung up (as on a client timeout), so it never writes to a closed socket.
    runner = web.AppRunner(app, handler_cancellation=True)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, int(runner.addresses[0][1])
