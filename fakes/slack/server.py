"""FakeSlackAPI: a local Slack Web API (chat, native streams, files, response_url, OAuth, Socket Mode) for slack_sdk."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aiohttp import web

from fakes.base import Handler, Json
from fakes.slack.agent import AgentMethods
from fakes.slack.files import Files
from fakes.slack.limits import Limit, RateLimits
from fakes.slack.methods import WebMethods
from fakes.slack.oauth import OAuth
from fakes.slack.records import SlackCall, Throttle, Workspace
from fakes.slack.response_url import ResponseUrls
from fakes.slack.socket_mode import SocketMode
from fakes.slack.views import ViewMethods
from fakes.slack.wire import Ctx, MethodHandler, SlackError, read_params


@dataclass(frozen=True, slots=True)
class _Scripted:
    method: str | None  # a Web API method, or None for the next call of any method
    status: int
    error: str
    retry_after: float | None
    delay: float | None = None
    # A storm: every call (of `method`) until this time on the fake's clock is answered so, not only the next one.
    until: float | None = None


class FakeSlackAPI(WebMethods, AgentMethods, ViewMethods, Files, ResponseUrls, SocketMode, OAuth):
    """An aiohttp app on 127.0.0.1 speaking Slack's Web API, files, response_url and Socket Mode, with limits.

    Give slack_sdk `base_url=fake.base_url`. Channels are created on first use (C public, G private, D DM) and
    belong to the workspace that used them first. Time (limits, stream expiry, response_url age) reads `clock`.
    """

    def __init__(
        self,
        *,
        limits: Mapping[str, int | Limit | None] | None = None,
        limits_on: bool = True,
        channel_burst: int = 3,
        channel_rate: float = 1.0,
        stream_lifetime: float = 300.0,
        stream_idle: float = 60.0,
        replies_page_max: int = 1000,
        app_id: str = "A0FAKEAPP",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            stream_lifetime=stream_lifetime,
            stream_idle=stream_idle,
            replies_page_max=replies_page_max,
            app_id=app_id,
            clock=clock,
        )
        self.limits_on = limits_on
        self.requests: list[SlackCall] = []  # type: ignore[assignment]  # Web API calls, not raw HTTP requests
        self.throttled: list[Throttle] = []
        self._rates = RateLimits(limits, burst=channel_burst, rate=channel_rate)
        self._scripted: list[_Scripted] = []
        self._methods: dict[str, tuple[MethodHandler, str | None]] = {
            "auth.test": (self._auth_test, "bot"),
            "chat.postMessage": (self._post_message, "bot"),
            "chat.postEphemeral": (self._post_ephemeral, "bot"),
            "chat.update": (self._update, "bot"),
            "chat.delete": (self._delete, "bot"),
            "chat.startStream": (self._start_stream, "bot"),
            "chat.appendStream": (self._append_stream, "bot"),
            "chat.stopStream": (self._stop_stream, "bot"),
            "assistant.threads.setStatus": (self._set_status, "bot"),
            "assistant.threads.setTitle": (self._set_title, "bot"),
            "assistant.threads.setSuggestedPrompts": (self._set_prompts, "bot"),
            "views.publish": (self._publish, "bot"),
            "conversations.replies": (self._replies, "bot"),
            "files.info": (self._file_info, "bot"),
            "reactions.add": (self._react, "bot"),
            "reactions.remove": (self._unreact, "bot"),
            "oauth.v2.access": (self._oauth_access, None),
            "apps.connections.open": (self._connections_open, "app"),
            "views.open": (self._views_open, "bot"),
        }

    # --- URLs and routes --------------------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """slack_sdk's base_url: http://127.0.0.1:PORT/api/."""
        return self.url("/api/")

    def add_routes(self, app: web.Application) -> None:
        """Web API methods, file downloads, response_url hooks and the Socket Mode websocket."""
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/files-pri/{key}/download/{name}", self._download)
        app.router.add_get("/files-pri/{key}/{name}", self._download)
        app.router.add_post("/commands/{tail:.+}", self._respond)
        app.router.add_get("/link/", self._socket)

    def error(self, status: int, message: str, *, retry_after: float | None = None) -> web.Response:
        """Slack's error body {"ok": false, "error": ...}; a 429 carries Retry-After in whole seconds (at least 1)."""
        headers = {"Retry-After": str(max(1, math.ceil(retry_after or 1)))} if status == 429 else None
        return web.json_response({"ok": False, "error": message}, status=status, headers=headers)

    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        return await handler(request)  # each route authenticates in its own way (Bearer, Basic, ticket, none)

    # --- Scripted faults --------------------------------------------------------------------------------------------

    def fail_next(
        self,
        status: int = 200,
        *,
        retry_after: float | None = None,
        times: int = 1,
        error: str | None = None,
        method: str | None = None,
    ) -> None:
        """Answer the next `times` calls (of `method`, or of any method) with this error instead of handling them.

        The error defaults to "ratelimited" for a 429 (Retry-After 1 unless given) and "internal_error" otherwise.
        """
        name = error or ("ratelimited" if status == 429 else "internal_error")
        self._scripted.extend(_Scripted(method, status, name, retry_after) for _ in range(times))

    def storm(
        self,
        status: int,
        seconds: float,
        *,
        retry_after: float | None = None,
        error: str | None = None,
        method: str | None = None,
    ) -> None:
        """Answer every call (of `method`, or of any method) for the next `seconds` with this error, as during an
        outage or a rate-limit storm: a 429 says Retry-After `retry_after` (default 1) each time."""
        name = error or ("ratelimited" if status == 429 else "internal_error")
        self._scripted.append(_Scripted(method, status, name, retry_after, until=self._clock() + seconds))

    def calm(self) -> None:
        """End every storm now (one-off faults still scripted stay)."""
        self._scripted = [fault for fault in self._scripted if fault.until is None]

    def delay_next(self, seconds: float, *, method: str | None = None) -> None:
        """Hold the next call (of `method`, or of any method) this long (or until the fake closes) first."""
        self._scripted.append(_Scripted(method, 0, "", None, delay=seconds))

    # --- Looking ----------------------------------------------------------------------------------------------------

    def calls(self, method: str | None = None) -> list[SlackCall]:
        """The recorded Web API calls (of one method), oldest first."""
        return [call for call in self.requests if method is None or call.method == method]

    @property
    def rate_limited_count(self) -> int:
        """How many 429s the fake has answered (per-method windows, channel buckets and scripted)."""
        return len(self.throttled)

    # --- The Web API pipeline ---------------------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        authorization = request.headers.get("Authorization", "")
        auth_kind = authorization.split(" ", 1)[0].lower() if authorization else "none"
        workspace: Workspace | None = None
        params: Json = {}
        transport = "query"
        try:
            params, token, transport = await read_params(request)
            if token is not None and auth_kind == "none":
                auth_kind = "param"
            entry = self._methods.get(method)
            if entry is None:
                raise SlackError("unknown_method", 404)
            handler, token_kind = entry
            if token_kind is not None:
                workspace = self._authenticate(authorization, token, token_kind)
            await self._scripted_fault(method, workspace)
            self._admit(method, workspace, params)
            result = await handler(Ctx(params, workspace, authorization))
            response = web.json_response({"ok": True, **result})
            error = None
        except SlackError as exc:
            response = self.error(exc.status, exc.error, retry_after=exc.retry_after)
            error = exc.error
        team = workspace.team_id if workspace is not None else None
        call = SlackCall(method, team, params, transport, request.method, auth_kind, error, self._clock())
        self.requests.append(call)
        self._notify()
        return response

    def _authenticate(self, header: str, token_param: str | None, kind: str) -> Workspace | None:
        token = header[len("Bearer ") :].strip() if header.startswith("Bearer ") else token_param
        if not token:
            raise SlackError("not_authed")
        if token in self._app_tokens:
            if kind != "app":
                raise SlackError("not_allowed_token_type")
            return None
        team_id = self._token_team.get(token)
        if team_id is None:
            raise SlackError("invalid_auth")
        if token in self._revoked:
            raise SlackError("token_revoked")
        if team_id in self._uninstalled:
            raise SlackError("account_inactive")
        if kind != "bot":
            raise SlackError("not_allowed_token_type")
        return self._workspaces[team_id]

    async def _scripted_fault(self, method: str, workspace: Workspace | None) -> None:
        now = self._clock()
        self._scripted = [f for f in self._scripted if f.until is None or f.until > now]
        fault = next((f for f in self._scripted if f.method in (None, method)), None)
        if fault is None:
            return
        if fault.until is None:
            self._scripted.remove(fault)
        if fault.delay is not None:
            await self._hold(fault.delay)
            return
        wait = max(1, math.ceil(fault.retry_after or 1))
        if fault.status == 429:
            self._throttle(method, workspace, None, "scripted", wait)
        raise SlackError(fault.error, fault.status, wait if fault.status == 429 else None)

    def _admit(self, method: str, workspace: Workspace | None, params: Json) -> None:
        """Per-workspace method windows and the per-channel chat.postMessage bucket; 429 when either is spent."""
        if not self.limits_on or workspace is None:
            return
        channel = str(params.get("channel", ""))
        hit = self._rates.admit(method, workspace.team_id, channel, self._clock())
        if hit is not None:
            scope, wait = hit
            self._throttle(method, workspace, channel if scope == "channel" else None, scope, wait)

    def _throttle(self, method: str, workspace: Workspace | None, channel: str | None, scope: str, wait: float) -> None:
        seconds = max(1, math.ceil(wait))  # Retry-After is whole seconds
        team = workspace.team_id if workspace is not None else None
        self.throttled.append(Throttle(method, team, channel, scope, seconds, self._clock()))
        if scope != "scripted":
            raise SlackError("ratelimited", 429, seconds)
