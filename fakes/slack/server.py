"""FakeSlackAPI: a local Slack Web API (chat, native streams, files, response_url, OAuth, Socket Mode) for slack_sdk."""

from __future__ import annotations

import asyncio
import base64
import binascii
import itertools
import json
import math
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any
from urllib.parse import quote

from aiohttp import WSMsgType, web

from fakes.base import FakeAPI, Handler
from fakes.limits import SlidingWindow, TokenBucket

__all__ = [
    "DEFAULT_LIMITS",
    "Ephemeral",
    "FakeSlackAPI",
    "Limit",
    "ResponsePost",
    "Shown",
    "SlackCall",
    "Throttle",
    "Workspace",
    "blocks_text",
]

Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Limit:
    """At most `count` calls of one method in any `per` seconds, per workspace (a sliding window)."""

    count: int
    per: float = 60.0


# Slack's rate-limit tiers: chat.update is Tier 3 (50+/min), chat.appendStream Tier 4 (100+/min), per workspace.
DEFAULT_LIMITS: Mapping[str, Limit] = {"chat.update": Limit(50), "chat.appendStream": Limit(100)}
MAX_TEXT = 40_000  # chat.postMessage truncates `text` beyond this (changelog 2018-04), it does not refuse it
MAX_MARKDOWN = 12_000  # markdown_text per call, and all markdown blocks of one message together
MAX_SECTION_TEXT = 3_000
MAX_BLOCKS = 50
RESPONSE_URL_USES = 5  # a response_url takes 5 posts within 30 minutes (slash command docs)
RESPONSE_URL_LIFETIME = 30 * 60.0
# What files.slack.com answers a download without a valid token: a 200 sign-in page, not a 4xx.
LOGIN_PAGE = '<!DOCTYPE html><html lang="en"><head><title>Slack</title></head><body>Sign in to Slack</body></html>'
_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{2,}")
_JSON_FIELDS = frozenset({"blocks", "chunks", "attachments", "loading_messages", "metadata"})


@dataclass(frozen=True, slots=True)
class Workspace:
    """One installed workspace: its team and the bot's identity and token."""

    team_id: str
    bot_token: str
    bot_user_id: str
    bot_id: str
    team_name: str = ""
    enterprise_id: str | None = None
    bot_name: str = "ragbot"


@dataclass(frozen=True, slots=True)
class SlackCall:
    """One Web API call as the fake answered it; `transport` says where its params came from."""

    method: str
    team_id: str | None
    params: Json
    transport: str  # "json", "form", "multipart" or "query" (no body: POST or GET with a query string)
    http_method: str
    authorization: str  # "bearer", "basic", "param" or "none"
    error: str | None  # None when the answer was ok
    time: float


@dataclass(frozen=True, slots=True)
class Throttle:
    """One 429 the fake answered: which limit, for how long."""

    method: str
    team_id: str | None
    channel: str | None
    scope: str  # "workspace" (per-method window), "channel" (chat.postMessage bucket) or "scripted"
    retry_after: int
    time: float


@dataclass(frozen=True, slots=True)
class Shown:
    """A message as a person reads it."""

    ts: str
    user: str
    thread_ts: str | None
    text: str
    blocks: list[Json]
    streaming: bool
    edits: int
    bot_id: str | None


@dataclass(frozen=True, slots=True)
class Ephemeral:
    """An ephemeral message: from chat.postEphemeral or a response_url post."""

    channel: str | None
    user: str | None
    text: str
    blocks: list[Json]
    thread_ts: str | None
    via: str


@dataclass(frozen=True, slots=True)
class ResponsePost:
    """One POST to a response_url and the status the fake answered."""

    url: str
    body: Json
    status: int
    time: float


@dataclass(slots=True)
class _Stream:
    started: float
    last: float
    mode: str | None  # "markdown_text" or "chunks": a stream keeps the shape of its first content
    state: str = "open"  # open, stopped, expired


@dataclass(slots=True)
class _Message:
    channel: str
    ts: str
    user: str
    bot_id: str | None = None
    thread_ts: str | None = None
    text: str | None = None
    markdown: str | None = None
    blocks: list[Json] = field(default_factory=list)
    deltas: list[str] | None = None  # a streamed message's text as it arrived; None once chat.update replaced it
    chunks: list[Json] = field(default_factory=list)  # task_update / plan_update chunks of a stream
    stream: _Stream | None = None
    edits: int = 0
    edited_ts: str | None = None
    deleted: bool = False
    reactions: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Channel:
    team_id: str
    bot_member: bool = True


@dataclass(frozen=True, slots=True)
class _File:
    team_id: str
    info: Json
    content: bytes
    # False: Slack answers its sign-in page even to the bot's token (a file from a workspace it cannot read).
    downloadable: bool = True


@dataclass(slots=True)
class _Hook:
    team_id: str | None
    channel: str | None
    user: str | None
    message_ts: str | None
    created: float
    uses: int = 0


@dataclass(frozen=True, slots=True)
class _OAuthCode:
    client_id: str
    client_secret: str
    redirect_uri: str | None
    answer: Json


@dataclass(frozen=True, slots=True)
class _Scripted:
    method: str | None
    status: int
    error: str
    retry_after: float | None
    delay: float | None = None


@dataclass(frozen=True, slots=True)
class _Ctx:
    params: Json
    workspace: Workspace | None
    authorization: str

    @property
    def bot(self) -> Workspace:
        assert self.workspace is not None  # bot methods are authenticated before they run
        return self.workspace


class _SlackError(Exception):
    def __init__(self, error: str, status: int = 200, retry_after: int | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.status = status
        self.retry_after = retry_after


_MethodHandler = Callable[[_Ctx], Awaitable[Json]]


class FakeSlackAPI(FakeAPI):
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
        super().__init__()
        merged: dict[str, int | Limit | None] = {**DEFAULT_LIMITS, **(limits or {})}
        self._limits = {
            name: limit if isinstance(limit, Limit) else Limit(limit)
            for name, limit in merged.items()
            if limit is not None
        }
        self.limits_on = limits_on
        self.app_id = app_id
        self.requests: list[SlackCall] = []  # type: ignore[assignment]  # Web API calls, not raw HTTP requests
        self.throttled: list[Throttle] = []
        self.socket_acks: list[Json] = []
        self.files_download_count = 0
        self.login_pages_served = 0
        self._burst = channel_burst
        self._rate = channel_rate
        self._lifetime = stream_lifetime
        self._idle = stream_idle
        self._page_max = replies_page_max
        self._clock = clock
        self._scripted: list[_Scripted] = []
        self._workspaces: dict[str, Workspace] = {}
        self._token_team: dict[str, str] = {}
        self._revoked: set[str] = set()
        self._uninstalled: set[str] = set()
        self._app_tokens: set[str] = set()
        self._channels: dict[str, _Channel] = {}
        self._messages: dict[tuple[str, str], _Message] = {}
        self._statuses: dict[tuple[str, str], str] = {}
        self._ephemerals: list[Ephemeral] = []
        self._responses: list[ResponsePost] = []
        self._files: dict[str, _File] = {}
        self._hooks: dict[str, _Hook] = {}
        self._codes: dict[str, _OAuthCode] = {}
        self._windows: dict[tuple[str, str], SlidingWindow] = {}
        self._buckets: dict[tuple[str, str], TokenBucket] = {}
        self._tickets: set[str] = set()
        self._sockets: list[web.WebSocketResponse] = []
        self._acks: dict[str, asyncio.Future[Json]] = {}
        self._epoch = int(time.time())
        self._seq = itertools.count(1)
        self._methods: dict[str, tuple[_MethodHandler, str | None]] = {
            "auth.test": (self._auth_test, "bot"),
            "chat.postMessage": (self._post_message, "bot"),
            "chat.postEphemeral": (self._post_ephemeral, "bot"),
            "chat.update": (self._update, "bot"),
            "chat.delete": (self._delete, "bot"),
            "chat.startStream": (self._start_stream, "bot"),
            "chat.appendStream": (self._append_stream, "bot"),
            "chat.stopStream": (self._stop_stream, "bot"),
            "assistant.threads.setStatus": (self._set_status, "bot"),
            "conversations.replies": (self._replies, "bot"),
            "files.info": (self._file_info, "bot"),
            "reactions.add": (self._react, "bot"),
            "reactions.remove": (self._unreact, "bot"),
            "oauth.v2.access": (self._oauth_access, None),
            "apps.connections.open": (self._connections_open, "app"),
        }

    # --- URLs and lifecycle -----------------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """slack_sdk's base_url: http://127.0.0.1:PORT/api/."""
        return self.url("/api/")

    def url(self, path: str) -> str:
        """An absolute URL on the fake, e.g. url("/files-pri/...")."""
        return f"http://127.0.0.1:{self._port}{path}"

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

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for socket in list(self._sockets):
            await socket.close()
        for waiter in self._acks.values():
            waiter.cancel()
        await super().__aexit__(exc_type, exc, tb)

    # --- Setting the scene ------------------------------------------------------------------------------------------

    def add_workspace(
        self,
        team_id: str,
        *,
        bot_token: str,
        bot_user_id: str,
        bot_id: str,
        team_name: str = "",
        enterprise_id: str | None = None,
    ) -> Workspace:
        """Install the app in a workspace: its bot token works from now on (again, after an uninstall)."""
        workspace = Workspace(team_id, bot_token, bot_user_id, bot_id, team_name or team_id.lower(), enterprise_id)
        self._workspaces[team_id] = workspace
        self._token_team[bot_token] = team_id
        self._revoked.discard(bot_token)
        self._uninstalled.discard(team_id)
        return workspace

    def workspace(self, team_id: str) -> Workspace:
        """The workspace installed under this team id."""
        return self._workspaces[team_id]

    def add_app_token(self, token: str) -> None:
        """An app-level token (xapp-...), good only for apps.connections.open."""
        self._app_tokens.add(token)

    def revoke(self, token: str) -> None:
        """Later calls with this token get token_revoked."""
        self._revoked.add(token)

    def uninstall(self, team_id: str) -> None:
        """The app is removed from the workspace: its bot tokens get account_inactive (a deleted bot, per Slack)."""
        self._uninstalled.add(team_id)

    def remove_bot(self, team_id: str, channel: str) -> None:
        """The bot leaves a channel: posts there get not_in_channel, other writes channel_not_found."""
        self._channel(team_id, channel).bot_member = False

    def user_message(self, team_id: str, channel: str, user: str, text: str, *, thread_ts: str | None = None) -> str:
        """Store a person's message (the tests deliver the matching event themselves); returns its ts."""
        self._channel(team_id, channel)
        return self._add(channel, user, thread_ts=thread_ts, text=text).ts

    def add_file(
        self,
        team_id: str,
        name: str,
        content: bytes,
        *,
        mimetype: str,
        filetype: str = "",
        size: int | None = None,
        owner: str = "U0FAKEUSER",
        downloadable: bool = True,
    ) -> Json:
        """A file uploaded in a workspace; returns its Slack file object (size may lie about the content).

        `downloadable=False` makes its download answer Slack's sign-in page whatever the token.
        """
        file_id = f"F{next(self._seq):09d}"
        key = f"{team_id}-{file_id}"
        now = int(time.time())
        info: Json = {
            "id": file_id,
            "created": now,
            "timestamp": now,
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "filetype": filetype or name.rsplit(".", 1)[-1].lower(),
            "pretty_type": (filetype or name.rsplit(".", 1)[-1]).upper(),
            "user": owner,
            "user_team": team_id,
            "editable": False,
            "size": len(content) if size is None else size,
            "mode": "hosted",
            "is_external": False,
            "external_type": "",
            "is_public": False,
            "public_url_shared": False,
            "display_as_bot": False,
            "username": "",
            "url_private": self.url(f"/files-pri/{key}/{quote(name)}"),
            "url_private_download": self.url(f"/files-pri/{key}/download/{quote(name)}"),
            "permalink": f"https://{team_id.lower()}.slack.com/files/{owner}/{file_id}/{quote(name)}",
        }
        self._files[key] = _File(team_id, info, content, downloadable)
        return dict(info)

    def response_url(
        self,
        *,
        team_id: str | None = None,
        channel: str | None = None,
        user: str | None = None,
        message_ts: str | None = None,
    ) -> str:
        """A fresh response_url; in_channel posts land in `channel`, replace_original edits `message_ts`."""
        path = f"/commands/{team_id or 'T0'}/{next(self._seq)}/{uuid.uuid4().hex}"
        self._hooks[path] = _Hook(team_id, channel, user, message_ts, self._clock())
        return self.url(path)

    def register_oauth_code(
        self,
        code: str,
        *,
        client_id: str,
        client_secret: str,
        team_id: str,
        team_name: str,
        installer_user_id: str,
        bot_token: str,
        bot_user_id: str,
        bot_id: str,
        scope: str,
        enterprise_id: str | None = None,
        redirect_uri: str | None = None,
    ) -> None:
        """An OAuth code that oauth.v2.access exchanges once; the install's bot token works from now on."""
        self.add_workspace(
            team_id,
            bot_token=bot_token,
            bot_user_id=bot_user_id,
            bot_id=bot_id,
            team_name=team_name,
            enterprise_id=enterprise_id,
        )
        answer: Json = {
            "app_id": self.app_id,
            "authed_user": {"id": installer_user_id},
            "scope": scope,
            "token_type": "bot",
            "access_token": bot_token,
            "bot_user_id": bot_user_id,
            "team": {"id": team_id, "name": team_name},
            "enterprise": None if enterprise_id is None else {"id": enterprise_id, "name": enterprise_id},
            "is_enterprise_install": False,
        }
        self._codes[code] = _OAuthCode(client_id, client_secret, redirect_uri, answer)

    def expire_stream(self, ts: str) -> None:
        """End a stream at once, as Slack does when it ages out: appends and stops then fail."""
        for message in self._messages.values():
            if message.ts == ts and message.stream is not None and message.stream.state == "open":
                message.stream.state = "expired"

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

    def delay_next(self, seconds: float, *, method: str | None = None) -> None:
        """Hold the next call (of `method`, or of any method) this long (or until the fake closes) first."""
        self._scripted.append(_Scripted(method, 0, "", None, delay=seconds))

    # --- Looking ----------------------------------------------------------------------------------------

    def calls(self, method: str | None = None) -> list[SlackCall]:
        """The recorded Web API calls (of one method), oldest first."""
        return [call for call in self.requests if method is None or call.method == method]

    @property
    def rate_limited_count(self) -> int:
        """How many 429s the fake has answered (per-method windows, channel buckets and scripted)."""
        return len(self.throttled)

    def visible(self, channel: str, *, thread_ts: str | None = None) -> list[Shown]:
        """What a person sees in a channel, oldest first: every message, or with thread_ts that thread only."""
        if thread_ts is not None:
            return self.thread(channel, thread_ts)
        return [self._shown(m) for (chan, _), m in self._messages.items() if chan == channel and not m.deleted]

    def thread(self, channel: str, thread_ts: str) -> list[Shown]:
        """A thread as a person reads it: the root, then its replies."""
        return [self._shown(m) for m in self._thread(channel, thread_ts)]

    def message(self, channel: str, ts: str) -> Shown:
        """One message as a person reads it (KeyError if there is none)."""
        return self._shown(self._messages[(channel, ts)])

    def status(self, channel: str, thread_ts: str) -> str:
        """The assistant status shown under a thread ("" when none or cleared)."""
        return self._statuses.get((channel, thread_ts), "")

    def ephemeral(self, channel: str | None = None) -> list[Ephemeral]:
        """Ephemeral messages (chat.postEphemeral and response_url), in one channel or all."""
        return [item for item in self._ephemerals if channel is None or item.channel == channel]

    def responses(self, url: str | None = None) -> list[ResponsePost]:
        """POSTs to response_urls (to one URL or all), refused ones included."""
        return [post for post in self._responses if url is None or post.url == url]

    def reactions(self, channel: str, ts: str) -> list[str]:
        """The bot's reactions on a message."""
        return list(self._messages[(channel, ts)].reactions)

    @property
    def socket_connections(self) -> int:
        """How many Socket Mode websockets are open."""
        return len(self._sockets)

    # --- Socket Mode ------------------------------------------------------------------------------------------------

    async def socket_push(
        self,
        payload_type: str,
        payload: Json,
        *,
        retry_attempt: int = 0,
        retry_reason: str = "",
        timeout: float = 10.0,  # noqa: ASYNC109  # a timeout argument reads best in tests
    ) -> Json:
        """Send an envelope ("events_api", "slash_commands", "interactive") on the newest socket; return its ack."""
        await self.wait_for(lambda: self._sockets, timeout)
        envelope_id = str(uuid.uuid4())
        accepts = payload_type == "slash_commands" or payload.get("type") in ("view_submission", "block_suggestion")
        envelope: Json = {
            "envelope_id": envelope_id,
            "payload": payload,
            "type": payload_type,
            "accepts_response_payload": accepts,
        }
        if payload_type == "events_api":
            envelope.update(retry_attempt=retry_attempt, retry_reason=retry_reason)
        waiter: asyncio.Future[Json] = asyncio.get_running_loop().create_future()
        self._acks[envelope_id] = waiter
        try:
            await self._sockets[-1].send_json(envelope)
            async with asyncio.timeout(timeout):
                return await waiter
        finally:
            self._acks.pop(envelope_id, None)

    async def socket_disconnect(self, reason: str = "refresh_requested") -> None:
        """Ask every connected client to reconnect, as Slack does before it closes a socket."""
        for socket in list(self._sockets):
            await socket.send_json({"type": "disconnect", "reason": reason, "debug_info": {"host": "applink-fake"}})

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        ticket = request.query.get("ticket", "")
        if ticket not in self._tickets:
            return web.Response(status=401, text="invalid ticket")
        self._tickets.discard(ticket)  # a wss URL is good for one connection
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self._sockets.append(socket)
        self._notify()
        try:
            await socket.send_json(
                {
                    "type": "hello",
                    "num_connections": len(self._sockets),
                    "debug_info": {"host": "applink-fake", "build_number": 1, "approximate_connection_time": 18060},
                    "connection_info": {"app_id": self.app_id},
                }
            )
            async for frame in socket:
                try:
                    ack = json.loads(frame.data) if frame.type == WSMsgType.TEXT else None
                except ValueError:
                    ack = None
                if not isinstance(ack, dict):
                    continue
                self.socket_acks.append(ack)
                waiter = self._acks.get(str(ack.get("envelope_id")))
                if waiter is not None and not waiter.done():
                    waiter.set_result(ack)
                self._notify()
        finally:
            self._sockets.remove(socket)
            self._notify()
        return socket

    # --- The Web API pipeline ---------------------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        authorization = request.headers.get("Authorization", "")
        auth_kind = authorization.split(" ", 1)[0].lower() if authorization else "none"
        workspace: Workspace | None = None
        params: Json = {}
        transport = "query"
        try:
            params, token, transport = await _read_params(request)
            if token is not None and auth_kind == "none":
                auth_kind = "param"
            entry = self._methods.get(method)
            if entry is None:
                raise _SlackError("unknown_method", 404)
            handler, token_kind = entry
            if token_kind is not None:
                workspace = self._authenticate(authorization, token, token_kind)
            await self._scripted_fault(method, workspace)
            self._admit(method, workspace, params)
            result = await handler(_Ctx(params, workspace, authorization))
            response = web.json_response({"ok": True, **result})
            error = None
        except _SlackError as exc:
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
            raise _SlackError("not_authed")
        if token in self._app_tokens:
            if kind != "app":
                raise _SlackError("not_allowed_token_type")
            return None
        team_id = self._token_team.get(token)
        if team_id is None:
            raise _SlackError("invalid_auth")
        if token in self._revoked:
            raise _SlackError("token_revoked")
        if team_id in self._uninstalled:
            raise _SlackError("account_inactive")
        if kind != "bot":
            raise _SlackError("not_allowed_token_type")
        return self._workspaces[team_id]

    async def _scripted_fault(self, method: str, workspace: Workspace | None) -> None:
        fault = next((f for f in self._scripted if f.method in (None, method)), None)
        if fault is None:
            return
        self._scripted.remove(fault)
        if fault.delay is not None:
            await self._hold(fault.delay)
            return
        wait = max(1, math.ceil(fault.retry_after or 1))
        if fault.status == 429:
            self._throttle(method, workspace, None, "scripted", wait)
        raise _SlackError(fault.error, fault.status, wait if fault.status == 429 else None)

    def _admit(self, method: str, workspace: Workspace | None, params: Json) -> None:
        """Per-workspace method windows and the per-channel chat.postMessage bucket; 429 when either is spent."""
        if not self.limits_on or workspace is None:
            return
        now = self._clock()
        limit = self._limits.get(method)
        window: SlidingWindow | None = None
        if limit is not None:
            window = self._windows.setdefault((workspace.team_id, method), SlidingWindow(limit.count, limit.per))
            if (wait := window.wait(now)) is not None:
                self._throttle(method, workspace, None, "workspace", wait)
        channel = str(params.get("channel", ""))
        if method == "chat.postMessage" and channel:
            bucket = self._buckets.setdefault((workspace.team_id, channel), TokenBucket(self._burst, 1 / self._rate))
            if (wait := bucket.wait(now)) is not None:
                self._throttle(method, workspace, channel, "channel", wait)
            bucket.count(now)
        if window is not None:
            window.count(now)

    def _throttle(self, method: str, workspace: Workspace | None, channel: str | None, scope: str, wait: float) -> None:
        seconds = max(1, math.ceil(wait))  # Retry-After is whole seconds
        team = workspace.team_id if workspace is not None else None
        self.throttled.append(Throttle(method, team, channel, scope, seconds, self._clock()))
        if scope != "scripted":
            raise _SlackError("ratelimited", 429, seconds)

    # --- Methods ----------------------------------------------------------------------------------------------------

    async def _auth_test(self, ctx: _Ctx) -> Json:
        ws = ctx.bot
        answer: Json = {
            "url": f"https://{ws.team_name.replace(' ', '-').lower()}.slack.com/",
            "team": ws.team_name,
            "user": ws.bot_name,
            "team_id": ws.team_id,
            "user_id": ws.bot_user_id,
            "bot_id": ws.bot_id,
            "is_enterprise_install": False,
        }
        if ws.enterprise_id is not None:
            answer["enterprise_id"] = ws.enterprise_id
        return answer

    async def _post_message(self, ctx: _Ctx) -> Json:
        channel = self._writable(ctx, refuse="not_in_channel")
        text, markdown, blocks = _content(ctx.params)
        thread_ts = _opt(ctx.params, "thread_ts")
        message = self._add(channel, ctx.bot.bot_user_id, ctx.bot.bot_id, thread_ts, text, markdown, blocks or [])
        if thread_ts is not None:
            self._statuses.pop((channel, thread_ts), None)  # Slack clears the status when the app replies
        return {"channel": channel, "ts": message.ts, "message": self._message_json(message)}

    async def _post_ephemeral(self, ctx: _Ctx) -> Json:
        channel = self._writable(ctx)
        user = _opt(ctx.params, "user")
        if user is None:
            raise _SlackError("user_not_in_channel")
        text, markdown, blocks = _content(ctx.params)
        shown = markdown if markdown is not None else blocks_text(blocks) if blocks else text or ""
        thread_ts = _opt(ctx.params, "thread_ts")
        self._ephemerals.append(Ephemeral(channel, user, shown, blocks or [], thread_ts, "chat.postEphemeral"))
        return {"message_ts": self._next_ts()}

    async def _update(self, ctx: _Ctx) -> Json:
        message = self._own(ctx, "cant_update_message")
        if message.stream is not None and self._stream_open(message):
            # Measured against live Slack by others (undocumented): a message still streaming refuses edits.
            raise _SlackError("streaming_state_conflict")
        text, markdown, blocks = _content(ctx.params)
        if markdown is not None:
            message.text, message.markdown, message.blocks = None, markdown, []
        else:
            message.text = text if text is not None else message.text
            message.blocks = blocks if blocks is not None else message.blocks  # omitted blocks stay (Slack's rule)
            message.markdown = None
        message.deltas = None
        self._edited(message)
        return {
            "channel": message.channel,
            "ts": message.ts,
            "text": message.text or "",
            "message": self._message_json(message),
        }

    async def _delete(self, ctx: _Ctx) -> Json:
        message = self._own(ctx, "cant_delete_message")
        message.deleted = True
        return {"channel": message.channel, "ts": message.ts}

    async def _start_stream(self, ctx: _Ctx) -> Json:
        channel = self._writable(ctx)
        if channel[0] in "CG":  # "Required when streaming to channels" (chat.startStream docs)
            for name in ("recipient_user_id", "recipient_team_id"):
                if not ctx.params.get(name):
                    raise _SlackError(f"missing_{name}")
        delta, blocks, chunks, mode = _stream_content(ctx.params)
        thread_ts = _opt(ctx.params, "thread_ts")
        now = self._clock()
        message = self._add(channel, ctx.bot.bot_user_id, ctx.bot.bot_id, thread_ts, None, None, blocks)
        message.deltas = [delta] if delta else []
        message.chunks = chunks
        message.stream = _Stream(now, now, mode)
        if thread_ts is not None:
            self._statuses.pop((channel, thread_ts), None)
        return {"channel": channel, "ts": message.ts}

    async def _append_stream(self, ctx: _Ctx) -> Json:
        message = self._streaming(ctx)
        delta, blocks, chunks, mode = _stream_content(ctx.params)
        if mode is None:
            raise _SlackError("invalid_arguments")
        self._extend_stream(message, delta, blocks, chunks, mode)
        return {"channel": message.channel, "ts": message.ts}

    async def _stop_stream(self, ctx: _Ctx) -> Json:
        message = self._streaming(ctx)
        delta, blocks, chunks, mode = _stream_content(ctx.params)
        blocks += _json_list(ctx.params.get("blocks"), "invalid_blocks") or []
        self._extend_stream(message, delta, blocks, chunks, mode)
        assert message.stream is not None
        message.stream.state = "stopped"
        return {"channel": message.channel, "ts": message.ts, "message": self._message_json(message)}

    async def _set_status(self, ctx: _Ctx) -> Json:
        channel = self._writable(ctx, key="channel_id")
        thread_ts = _opt(ctx.params, "thread_ts")
        status = ctx.params.get("status")
        if thread_ts is None or status is None:
            raise _SlackError("invalid_arguments")
        if status:
            self._statuses[(channel, thread_ts)] = str(status)
        else:
            self._statuses.pop((channel, thread_ts), None)
        return {}

    async def _replies(self, ctx: _Ctx) -> Json:
        channel = self._writable(ctx)
        thread = self._thread(channel, _opt(ctx.params, "ts") or "")
        if not thread:
            raise _SlackError("thread_not_found")
        try:
            limit = min(max(1, int(ctx.params.get("limit") or 1000)), self._page_max)
        except ValueError as exc:
            raise _SlackError("invalid_limit") from exc
        start = 0
        cursor = _opt(ctx.params, "cursor")
        if cursor:
            try:
                start = int(base64.b64decode(cursor).decode().removeprefix("next:"))
            except (ValueError, binascii.Error) as exc:
                raise _SlackError("invalid_cursor") from exc
        page = thread[start : start + limit]
        more = start + limit < len(thread)
        cursor_out = base64.b64encode(f"next:{start + limit}".encode()).decode() if more else ""
        return {
            "messages": [self._message_json(m) for m in page],
            "has_more": more,
            "response_metadata": {"next_cursor": cursor_out},
        }

    async def _file_info(self, ctx: _Ctx) -> Json:
        file_id = _opt(ctx.params, "file") or ""
        stored = self._files.get(f"{ctx.bot.team_id}-{file_id}")
        if stored is None:
            raise _SlackError("file_not_found")
        return {"file": dict(stored.info), "comments": [], "response_metadata": {"next_cursor": ""}}

    async def _react(self, ctx: _Ctx) -> Json:
        message, name = self._reaction_target(ctx)
        if name in message.reactions:
            raise _SlackError("already_reacted")
        message.reactions.append(name)
        return {}

    async def _unreact(self, ctx: _Ctx) -> Json:
        message, name = self._reaction_target(ctx)
        if name not in message.reactions:
            raise _SlackError("no_reaction")
        message.reactions.remove(name)
        return {}

    async def _oauth_access(self, ctx: _Ctx) -> Json:
        client_id, client_secret = _opt(ctx.params, "client_id"), _opt(ctx.params, "client_secret")
        if ctx.authorization.startswith("Basic "):  # slack_sdk sends client_id:client_secret as HTTP Basic auth
            try:
                decoded = base64.b64decode(ctx.authorization[len("Basic ") :], validate=True).decode()
            except (binascii.Error, UnicodeDecodeError) as exc:
                raise _SlackError("invalid_client_id") from exc
            client_id, _, client_secret = decoded.partition(":")
        code = self._codes.get(_opt(ctx.params, "code") or "")
        if not client_id or (code is not None and code.client_id != client_id):
            raise _SlackError("invalid_client_id")
        if code is None:
            raise _SlackError("invalid_code")  # unknown, or already exchanged
        if client_secret != code.client_secret:
            raise _SlackError("bad_client_secret")
        if code.redirect_uri is not None and _opt(ctx.params, "redirect_uri") != code.redirect_uri:
            raise _SlackError("bad_redirect_uri")
        del self._codes[_opt(ctx.params, "code") or ""]
        return dict(code.answer)

    async def _connections_open(self, ctx: _Ctx) -> Json:
        ticket = uuid.uuid4().hex
        self._tickets.add(ticket)
        return {"url": self.url(f"/link/?ticket={ticket}&app_id={self.app_id}").replace("http://", "ws://", 1)}

    # --- HTTP routes beside the API ---------------------------------------------------------------------------------

    async def _download(self, request: web.Request) -> web.StreamResponse:
        stored = self._files.get(request.match_info["key"])
        header = request.headers.get("Authorization", "")
        token = header[len("Bearer ") :].strip() if header.startswith("Bearer ") else ""
        team = self._token_team.get(token)
        valid = team is not None and token not in self._revoked and team not in self._uninstalled
        if stored is None or not valid or team != stored.team_id or not stored.downloadable:
            self.login_pages_served += 1
            self._notify()
            return web.Response(text=LOGIN_PAGE, content_type="text/html")
        self.files_download_count += 1
        self._notify()
        headers = {"Content-Type": str(stored.info["mimetype"])}
        if "/download/" in request.path:
            headers["Content-Disposition"] = f'attachment; filename="{stored.info["name"]}"'
        return web.Response(body=stored.content, headers=headers)

    async def _respond(self, request: web.Request) -> web.StreamResponse:
        hook = self._hooks.get(request.path)
        try:
            body = await request.json()
        except ValueError:
            body = None
        now = self._clock()
        if hook is None:
            status, answer = 404, "no_service"
        elif not isinstance(body, dict):
            status, answer = 400, "invalid_payload"
        elif now - hook.created > RESPONSE_URL_LIFETIME:
            status, answer = 404, "expired_url"
        elif hook.uses >= RESPONSE_URL_USES:
            status, answer = 404, "used_url"
        elif not (body.get("text") or body.get("blocks") or body.get("delete_original")):
            status, answer = 400, "no_text"
        else:
            hook.uses += 1
            self._apply_response(hook, body)
            status, answer = 200, "ok"
        self._responses.append(ResponsePost(str(request.url), body if isinstance(body, dict) else {}, status, now))
        self._notify()
        return web.Response(status=status, text=answer)

    def _apply_response(self, hook: _Hook, body: Json) -> None:
        text = str(body.get("text") or "")
        blocks = _json_list(body.get("blocks"), "invalid_blocks") or []
        original = self._messages.get((hook.channel or "", hook.message_ts or ""))
        if body.get("delete_original") and original is not None:
            original.deleted = True
        elif body.get("replace_original") and original is not None:
            original.text, original.blocks, original.markdown, original.deltas = text, blocks, None, None
            self._edited(original)
        elif body.get("response_type") == "in_channel" and hook.channel is not None:
            workspace = self._workspaces.get(hook.team_id or "")
            user, bot_id = (workspace.bot_user_id, workspace.bot_id) if workspace else ("U0FAKEBOT", "B0FAKEBOT")
            self._add(hook.channel, user, bot_id, _opt(body, "thread_ts"), text, None, blocks)
        else:
            shown = blocks_text(blocks) if blocks else text
            self._ephemerals.append(
                Ephemeral(hook.channel, hook.user, shown, blocks, _opt(body, "thread_ts"), "response_url")
            )

    # --- Messages and channels --------------------------------------------------------------------------------------

    def _next_ts(self) -> str:
        return f"{self._epoch}.{next(self._seq):06d}"

    def _channel(self, team_id: str, channel: str) -> _Channel:
        if not _CHANNEL_ID.fullmatch(channel):
            raise _SlackError("channel_not_found")
        found = self._channels.setdefault(channel, _Channel(team_id))
        if found.team_id != team_id:
            raise _SlackError("channel_not_found")  # another workspace's channel is invisible
        return found

    def _writable(self, ctx: _Ctx, *, key: str = "channel", refuse: str = "channel_not_found") -> str:
        channel = _opt(ctx.params, key) or ""
        if not self._channel(ctx.bot.team_id, channel).bot_member:
            raise _SlackError(refuse)
        return channel

    def _add(
        self,
        channel: str,
        user: str,
        bot_id: str | None = None,
        thread_ts: str | None = None,
        text: str | None = None,
        markdown: str | None = None,
        blocks: list[Json] | None = None,
    ) -> _Message:
        message = _Message(channel, self._next_ts(), user, bot_id, thread_ts, text, markdown, blocks or [])
        self._messages[(channel, message.ts)] = message
        return message

    def _edited(self, message: _Message) -> None:
        message.edits += 1
        message.edited_ts = self._next_ts()

    def _own(self, ctx: _Ctx, refuse: str) -> _Message:
        channel = self._writable(ctx)
        message = self._messages.get((channel, _opt(ctx.params, "ts") or ""))
        if message is None or message.deleted:
            raise _SlackError("message_not_found")
        if message.bot_id != ctx.bot.bot_id:
            raise _SlackError(refuse)
        return message

    def _streaming(self, ctx: _Ctx) -> _Message:
        message = self._own(ctx, "message_not_owned_by_app")
        if message.stream is None or not self._stream_open(message):
            raise _SlackError("message_not_in_streaming_state")
        return message

    def _stream_open(self, message: _Message) -> bool:
        """Whether a stream still takes appends; it ends `stream_lifetime` after start or `stream_idle` after use."""
        stream = message.stream
        if stream is None:
            return False
        now = self._clock()
        if stream.state == "open" and (now - stream.started >= self._lifetime or now - stream.last >= self._idle):
            stream.state = "expired"
        return stream.state == "open"

    def _extend_stream(
        self, message: _Message, delta: str, blocks: list[Json], chunks: list[Json], mode: str | None
    ) -> None:
        stream = message.stream
        assert stream is not None
        assert message.deltas is not None
        if mode is not None and stream.mode is not None and mode != stream.mode:
            # Measured by others, undocumented: a stream keeps the shape (markdown_text or chunks) it opened with.
            raise _SlackError("streaming_mode_mismatch")
        stream.mode = stream.mode or mode
        stream.last = self._clock()
        if delta:
            message.deltas.append(delta)
        message.blocks += blocks
        message.chunks += chunks

    def _thread(self, channel: str, thread_ts: str) -> list[_Message]:
        root = self._messages.get((channel, thread_ts))
        if root is None or root.deleted:
            return []
        if root.thread_ts is not None and root.thread_ts != root.ts:
            return self._thread(channel, root.thread_ts)  # a reply's ts finds its whole thread
        replies = [m for (c, _), m in self._messages.items() if c == channel and m.thread_ts == thread_ts]
        return [root, *(m for m in replies if m is not root and not m.deleted)]

    def _reaction_target(self, ctx: _Ctx) -> tuple[_Message, str]:
        channel = self._writable(ctx)
        message = self._messages.get((channel, _opt(ctx.params, "timestamp") or ""))
        name = _opt(ctx.params, "name")
        if message is None or message.deleted:
            raise _SlackError("message_not_found")
        if not name:
            raise _SlackError("invalid_name")
        return message, name

    def _shown(self, message: _Message) -> Shown:
        streaming = message.stream is not None and self._stream_open(message)
        return Shown(
            message.ts,
            message.user,
            message.thread_ts,
            _reads(message),
            list(message.blocks),
            streaming,
            message.edits,
            message.bot_id,
        )

    def _message_json(self, message: _Message) -> Json:
        # With blocks, `text` is the message's own fallback; a stream or a markdown_text message reads as written.
        text = message.text if message.text is not None and message.deltas is None else _reads(message)
        out: Json = {"type": "message", "ts": message.ts, "user": message.user, "text": text}
        if message.bot_id is not None:
            out.update(bot_id=message.bot_id, app_id=self.app_id)
        if message.blocks:
            out["blocks"] = message.blocks
        if message.thread_ts is not None:
            out["thread_ts"] = message.thread_ts
        replies = [m for (c, _), m in self._messages.items() if c == message.channel and m.thread_ts == message.ts]
        replies = [m for m in replies if m is not message and not m.deleted]
        if replies:
            out.update(thread_ts=message.ts, reply_count=len(replies))
        if message.edited_ts is not None:
            out["edited"] = {"user": message.user, "ts": message.edited_ts}
        return out


# --- Reading params and content -------------------------------------------------------------------------------------


async def _read_params(request: web.Request) -> tuple[Json, str | None, str]:
    """The call's params (query string, then a JSON or form body over it), a token param, and the transport."""
    params: Json = dict(request.query.items())
    token = params.pop("token", None)
    transport = "query"
    if request.body_exists:
        if request.content_type == "application/json":
            try:
                body = await request.json()
            except ValueError as exc:
                raise _SlackError("invalid_json") from exc
            if not isinstance(body, dict):
                raise _SlackError("invalid_json")
            body.pop("token", None)  # Slack takes a token from the header or a form field, never from JSON
            params.update(body)
            transport = "json"
        elif request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
            form = {name: value for name, value in (await request.post()).items() if isinstance(value, str)}
            token = form.pop("token", token)
            params.update(form)
            transport = "form" if request.content_type.endswith("urlencoded") else "multipart"
        else:
            raise _SlackError("invalid_post_type")
    return params, token, transport


def _opt(params: Json, name: str) -> str | None:
    value = params.get(name)
    return None if value is None else str(value)


def _json_list(value: Any, error: str) -> list[Json] | None:
    """A list of objects, given as JSON (a JSON body) or as a JSON string (a form field)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise _SlackError(error) from exc
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise _SlackError(error)
    return value


def _content(params: Json) -> tuple[str | None, str | None, list[Json] | None]:
    """text, markdown_text and blocks of a post or update, checked as Slack checks them."""
    text, markdown = _opt(params, "text"), _opt(params, "markdown_text")
    blocks = _json_list(params.get("blocks"), "invalid_blocks")
    if markdown is not None and (text is not None or blocks is not None):
        raise _SlackError("markdown_text_conflict")
    if markdown is not None and len(markdown) > MAX_MARKDOWN:
        raise _SlackError("msg_too_long")
    if not (text or markdown or blocks or params.get("attachments")):
        raise _SlackError("no_text")
    if blocks is not None:
        _check_blocks(blocks)
    return (text[:MAX_TEXT] if text is not None else None), markdown, blocks


def _check_blocks(blocks: list[Json]) -> None:
    if len(blocks) > MAX_BLOCKS or any(not isinstance(block.get("type"), str) for block in blocks):
        raise _SlackError("invalid_blocks")
    for block in blocks:
        text = block.get("text")
        if block["type"] == "section" and isinstance(text, dict) and len(str(text.get("text", ""))) > MAX_SECTION_TEXT:
            raise _SlackError("invalid_blocks")
    if sum(len(str(block.get("text", ""))) for block in blocks if block["type"] == "markdown") > MAX_MARKDOWN:
        raise _SlackError("msg_blocks_too_long")


def _stream_content(params: Json) -> tuple[str, list[Json], list[Json], str | None]:
    """One stream call's text delta, blocks and other chunks, and its mode (None when it carries nothing)."""
    markdown = _opt(params, "markdown_text")
    chunks = _json_list(params.get("chunks"), "invalid_chunks")
    if markdown is not None and chunks is not None:
        raise _SlackError("invalid_arguments")
    pieces = [markdown] if markdown else []
    blocks: list[Json] = []
    others: list[Json] = []
    for chunk in chunks or []:
        kind = chunk.get("type")
        if kind == "markdown_text":
            pieces.append(str(chunk.get("text", "")))
        elif kind == "blocks":
            blocks += _json_list(chunk.get("blocks"), "invalid_chunks") or []
        elif kind in ("task_update", "plan_update"):
            others.append(chunk)
        else:
            raise _SlackError("invalid_chunks")
    delta = "".join(pieces)
    if len(delta) > MAX_MARKDOWN:  # per call, not cumulative
        raise _SlackError("msg_too_long")
    mode = "markdown_text" if markdown is not None else "chunks" if chunks else None
    return delta, blocks, others, mode


def _reads(message: _Message) -> str:
    """What a person reads: a stream's deltas then its blocks, else markdown_text, else the blocks, else text."""
    if message.deltas is not None:
        return "\n".join(part for part in ("".join(message.deltas), blocks_text(message.blocks)) if part)
    if message.markdown is not None:
        return message.markdown
    if message.blocks:
        return blocks_text(message.blocks)  # with blocks, `text` is only the notification fallback
    return message.text or ""


def blocks_text(blocks: list[Json]) -> str:
    """The readable text of section, header, markdown, context and rich_text blocks, one block a line."""
    lines: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind in ("section", "header"):
            parts = [block.get("text"), *(block.get("fields") or [])]
            lines.extend(str(part.get("text", "")) for part in parts if isinstance(part, dict))
        elif kind == "markdown":
            lines.append(str(block.get("text", "")))
        elif kind == "context":
            elements = block.get("elements") or []
            lines.append(" ".join(str(e.get("text", "")) for e in elements if isinstance(e, dict) and "text" in e))
        elif kind == "rich_text":
            lines.append(_rich_text(block))
    return "\n".join(line for line in lines if line)


def _rich_text(node: Any) -> str:
    if isinstance(node, dict):
        if isinstance(node.get("text"), str):
            return str(node["text"])
        return "".join(_rich_text(child) for child in node.get("elements") or [])
    return ""
