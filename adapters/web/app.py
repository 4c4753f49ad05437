"""The web chat's routes: the page, its assets, and a small JSON + server-sent-events API over the manager."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from aiohttp import BodyPartReader, web

from adapters.web import guard
from adapters.web.reply import EventSink, WebReplyTarget, encode_events, source_json
from adapters.web.session import (
    ACCESS_COOKIE,
    ADMIN_AGE,
    ADMIN_COOKIE,
    SESSION_AGE,
    SESSION_COOKIE,
    SessionSigner,
    SharedRevocations,
    load_key,
    token_matches,
)
from adapters.web.settings import WebSettings
from adapters.web.throttle import LoginThrottle
from adapters.web.words import page_texts
from bot.app.bodies import MAX_BODY, allow_large_bodies
from bot.app.settings import Settings
from bot.chat.feedback import NOTE_MAX
from bot.chat.limits import RateLimit, RateLimiter
from bot.chat.manager import ConversationManager, TranscriptEntry
from bot.chat.media import MediaLimits
from bot.chat.popular import PopularQuestions
from bot.chat.recorder import OpenTurn
from bot.commands.registry import parse_command
from bot.ports import Adapter, ReplyTarget
from bot.types import Attachment, ConversationKey, IncomingMessage, UserRef
from bot.words import messages
from storage.db import Database
from storage.errors import DatabaseUnavailable
from storage.records import MessageRecord
from storage.repos.answer_meta import AnswerMetaRepo
from storage.repos.faqs import FaqRepo
from storage.repos.leases import LeaseRepo

log = logging.getLogger(__name__)

PLATFORM: Final = "web"
STATIC_DIR: Final = Path(__file__).parent / "static"
_HISTORY_LIMIT: Final = 200
_MAX_TEXT_BYTES: Final = 64 * 1024
_MESSAGE_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Files per upload: with the per-file limit, what one upload may make the process hold.
_MAX_UPLOAD_FILES: Final = 20
_SESSION_KEY: Final = web.RequestKey("web_session_id", str)
_ADMIN_KEY: Final = web.RequestKey("web_admin", bool)
# The commands that take files (as Telegram's and Slack's adapters attach a document to them).
_FILE_COMMANDS: Final = frozenset({"ingest", "faq"})
# Questions offered on an empty page: as many as Slack's suggested prompts, one short row.
_SUGGESTIONS: Final = 4
# The form fields a question with media carries beside its file.
_MEDIA_FIELDS: Final = frozenset({"text", "id", "seconds"})

SignerSource = Callable[[], Awaitable[SessionSigner]]
"""Makes the session signer once it is needed: its key is read from the database (adapters.web.session)."""


@dataclass(frozen=True, slots=True)
class WebConfig:
    """The web chat's settings."""

    admin_token: str | None
    access_token: str | None
    upload_limit: int
    address_rate_limit: RateLimit = field(default_factory=lambda: RateLimit(count=120, window=60.0))
    # What a question may bring: an image or a recording up to these sizes, a recording up to this long.
    media: MediaLimits = field(default_factory=MediaLimits)


class WebChat:
    """The web chat adapter: mounts its routes; runs each answer in a tracked task so a closed tab loses nothing."""

    name = PLATFORM

    def __init__(
        self,
        manager: ConversationManager,
        config: WebConfig,
        signer: SignerSource,
        revocations: SharedRevocations | None = None,
        popular: PopularQuestions | None = None,
    ) -> None:
        self._manager = manager
        # The most asked FAQs, offered on an empty page as questions to click (None: none offered).
        self._popular = popular
        # Admin logouts heard by every instance (None: this process's memory alone, for tests of one process).
        self._revocations = revocations
        self._config = config
        self._signer_source = signer
        self._loaded_signer: SessionSigner | None = None
        self._signer_loading = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._logins = LoginThrottle()
        # Per client address, beside the manager's per-session limit: a new session is one GET away.
        self._addresses = RateLimiter(config.address_rate_limit)
        manager.resume_on(PLATFORM, self._resume_target)

    def mount(self, app: web.Application) -> None:
        """Add the page, its assets and the API."""
        app.middlewares.append(self._session_middleware)
        app.router.add_get("/", self.index)
        app.router.add_static("/static/", STATIC_DIR, append_version=False)
        app.router.add_get("/api/session", self.session)
        app.router.add_get("/api/history", self.history)
        app.router.add_post("/api/messages", self.post_message)
        app.router.add_post("/api/stop", self.stop_answer)
        app.router.add_post("/api/feedback", self.feedback)
        app.router.add_post("/api/feedback/reason", self.feedback_reason)
        app.router.add_post("/api/new", self.new_conversation)
        app.router.add_post("/api/admin/login", self.admin_login)
        app.router.add_post("/api/admin/logout", self.admin_logout)
        app.router.add_post(guard.UPLOAD_PATH, self.upload)
        allow_large_bodies(app, guard.UPLOAD_PATH, _MAX_UPLOAD_FILES * self._config.upload_limit + MAX_BODY)
        app.router.add_post(guard.MEDIA_PATH, self.post_media)
        allow_large_bodies(app, guard.MEDIA_PATH, self._media_limit + MAX_BODY)

    async def start(self) -> None:
        """Load the session signer (its key is the database's), so a database that cannot give it stops the start."""
        await self._load_signer()

    async def stop(self) -> None:
        """Let answers in flight finish (they are stored whole even when their tab closed)."""
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=30)

    # --- sessions -----------------------------------------------------------------------------------------------

    async def _load_signer(self) -> None:
        # `ragbot serve` listens before it starts its adapters, so a request may be the first to need the signer.
        async with self._signer_loading:
            if self._loaded_signer is None:
                self._loaded_signer = await self._signer_source()

    @property
    def _signer(self) -> SessionSigner:
        assert self._loaded_signer is not None, "the session middleware loads the signer before any route runs"
        return self._loaded_signer

    @web.middleware
    async def _session_middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if not (request.path == "/" or request.path.startswith("/api/")):
            return await handler(request)
        if self._loaded_signer is None:
            await self._load_signer()
        fresh_access = self._fresh_access(request)
        if fresh_access is None and not self._signer.has_access(
            request.cookies.get(ACCESS_COOKIE), self._config.access_token
        ):
            return _error(403, messages.WEB_NEEDS_ACCESS)
        changes_state = request.path.startswith("/api/") and request.method == "POST"
        if changes_state and (refused := guard.refusal(request)) is not None:
            log.warning("web=refused reason=cross_site path=%s address=%s", request.path, request.remote)
            return _error(*refused)
        session_id = self._signer.session_id(request.cookies.get(SESSION_COOKIE))
        cookie = None
        if session_id is None:
            if changes_state:
                return _error(403, messages.WEB_SESSION_EXPIRED)
            cookie = self._signer.new_session()
            session_id = cookie.split(".")[0]
        request[_SESSION_KEY] = session_id
        request[_ADMIN_KEY] = await self._admin(session_id, request.cookies.get(ADMIN_COOKIE))
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            response = exc
        if cookie is not None:
            _set_cookie(request, response, SESSION_COOKIE, cookie, SESSION_AGE)
        if fresh_access is not None:
            _set_cookie(request, response, ACCESS_COOKIE, fresh_access, SESSION_AGE)
        if isinstance(response, web.HTTPException):
            raise response
        return response

    def _fresh_access(self, request: web.Request) -> str | None:
        token = self._config.access_token
        given = request.query.get("access")
        if request.path != "/" or not token or given is None:
            return None
        # Wrong access links lock the address out like wrong admin tokens (each on its own count).
        address = f"access:{request.remote}"
        if self._logins.locked_for(address) > 0:
            return None
        if not token_matches(given, token):
            self._logins.failed(address)
            log.warning("web=access_refused address=%s", request.remote)
            return None
        return self._signer.access_cookie(token)

    def _key(self, request: web.Request) -> ConversationKey:
        return ConversationKey(PLATFORM, "", request[_SESSION_KEY])

    async def _admin(self, session_id: str, proof: str | None) -> bool:
        """Whether the admin proof holds for this session: signed, fresh, and logged out on no instance."""
        if not self._signer.is_admin(session_id, proof, self._config.admin_token):
            return False
        return proof is None or self._revocations is None or not await self._revocations.revoked(proof)

    def _is_admin(self, request: web.Request) -> bool:
        return bool(request.get(_ADMIN_KEY, False))

    def _user(self, request: web.Request) -> UserRef:
        # Web admins are proven by the token they entered (their cookie), not listed by id.
        return UserRef(request[_SESSION_KEY], verified_admin=self._is_admin(request))

    # --- pages and reads ------------------------------------------------------------------------------------------

    async def index(self, request: web.Request) -> web.StreamResponse:
        """The chat page (after an access link, a redirect that drops the token from the address bar)."""
        if "access" in request.query:
            raise web.HTTPFound("/")
        return web.FileResponse(STATIC_DIR / "index.html", headers=_PAGE_HEADERS)

    async def session(self, request: web.Request) -> web.Response:
        """What the page needs to know: admin or not, the knowledge bases in use, the upload limit, and its own words
        in the chat's language (its /lang, else the browser's first language)."""
        key = self._key(request)
        names = await self._manager.readable_kb_names(key)
        lang = await self._manager.language(key, app_language=_browser_language(request))
        suggestions = await self._suggestions(key)
        return web.json_response(
            {
                "admin": self._is_admin(request),
                "admin_enabled": bool(self._config.admin_token),
                "knowledge_bases": names,
                "upload_limit_mb": self._config.upload_limit / 1_000_000,
                # The page stops a recording at this length, and refuses a pasted image over its limit unsent.
                "audio_seconds": self._config.media.audio_seconds,
                "image_limit_mb": self._config.media.image_bytes / 1_000_000,
                "language": lang,
                "texts": page_texts(lang),
                "suggestions": suggestions,
            }
        )

    async def _suggestions(self, key: ConversationKey) -> list[str]:
        """Up to four questions to offer on an empty page: the most asked FAQs of the knowledge bases read here."""
        if self._popular is None:
            return []
        try:
            return await self._popular.of(await self._manager.readable_kb_ids(key), _SUGGESTIONS)
        except DatabaseUnavailable:
            return []  # the page works without them

    async def history(self, request: web.Request) -> web.Response:
        """The conversation since its last /new, oldest first (none before its first message: nothing is stored)."""
        key = self._key(request)
        entries = await self._manager.transcript(key, _HISTORY_LIMIT) if await self._manager.known(key) else []
        return web.json_response({"messages": [_history_entry(entry) for entry in entries]})

    # --- writes -----------------------------------------------------------------------------------------------

    async def post_message(self, request: web.Request) -> web.StreamResponse:
        """A question or command; the reply streams back as server-sent events."""
        body = await _json_body(request)
        text = body.get("text") if isinstance(body, dict) else None
        if not isinstance(text, str):
            return _error(400, messages.WEB_BAD_BODY)
        # The page names each question it sends: sent again (its stream broke, a proxy retried the POST), it is
        # the same question, answered once.
        message_id = body.get("id", "")
        if not isinstance(message_id, str) or (message_id and not _MESSAGE_ID.fullmatch(message_id)):
            return _error(400, messages.WEB_BAD_MESSAGE_ID)
        if len(text.encode()) > _MAX_TEXT_BYTES:
            return _error(413, messages.web_text_too_long(_MAX_TEXT_BYTES))
        if (limited := await self._rate_limited(request)) is not None:
            return limited
        message = IncomingMessage(
            key=self._key(request),
            message_id=message_id,
            user=self._user(request),
            text=text,
            command=parse_command(text),
        )
        return await self._stream(request, message)

    @property
    def _media_limit(self) -> int:
        return max(self._config.media.image_bytes, self._config.media.audio_bytes)

    async def post_media(self, request: web.Request) -> web.StreamResponse:
        """A question with one pasted image or one recording (multipart: text, id, seconds, file): the media step
        reads it, what it understood is shown back, and the answer streams back as for a typed question."""
        if not request.content_type.startswith("multipart/"):
            return _error(400, messages.WEB_MEDIA_FORM)
        if (limited := await self._rate_limited(request)) is not None:
            return limited
        fields: dict[str, str] = {}
        media: Attachment | None = None
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "file" and media is None:
                name = part.filename or "media"
                data = await _read_limited(part, self._media_limit)
                if data is None:
                    log.info("web=media_refused reason=too_large limit=%d", self._media_limit)
                    lang = await self._manager.language(self._key(request), app_language=_browser_language(request))
                    return _error(413, messages.media_too_large(name, None, self._media_limit, lang))
                media = _attachment(name, data, part.headers.get("Content-Type", ""))
            elif part.name in _MEDIA_FIELDS:
                value = await _read_limited(part, _MAX_TEXT_BYTES)
                if value is None:
                    return _error(413, messages.web_text_too_long(_MAX_TEXT_BYTES))
                fields[part.name] = value.decode(part.get_charset("utf-8"), errors="replace")
        message_id = fields.get("id", "")
        if media is None or (message_id and not _MESSAGE_ID.fullmatch(message_id)):
            return _error(400, messages.WEB_MEDIA_FORM)
        message = IncomingMessage(
            key=self._key(request),
            message_id=message_id,
            user=self._user(request),
            text=fields.get("text", "").strip(),
            attachments=(replace(media, seconds=_seconds(fields.get("seconds", ""))),),
        )
        return await self._stream(request, message)

    async def upload(self, request: web.Request) -> web.StreamResponse:
        """Files for ingestion (admins), with the command typed beside them (`/faq import`, `/ingest`; none is
        `/ingest`): saved, queued, and the jobs' progress streamed back."""
        if not self._is_admin(request):
            return _error(403, messages.WEB_ADMIN_ONLY)
        if not request.content_type.startswith("multipart/"):
            return _error(400, messages.WEB_UPLOAD_FORM)
        if (limited := await self._rate_limited(request)) is not None:
            return limited
        files: list[Attachment] = []
        text = "/ingest"
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "text":
                typed = await _read_limited(part, _MAX_TEXT_BYTES)
                if typed is None:
                    return _error(413, messages.web_text_too_long(_MAX_TEXT_BYTES))
                text = typed.decode(part.get_charset("utf-8"), errors="replace").strip() or text
                continue
            if part.name != "file" or not part.filename:
                continue
            if len(files) == _MAX_UPLOAD_FILES:
                return _error(413, messages.web_too_many_files(_MAX_UPLOAD_FILES))
            data = await _read_limited(part, self._config.upload_limit)
            if data is None:
                log.info(
                    "web=upload_refused reason=too_large limit=%d setting=INGEST_MAX_FILE_MB", self._config.upload_limit
                )
                return _error(413, messages.file_too_large(part.filename, None, self._config.upload_limit))
            files.append(_attachment(part.filename, data, part.headers.get("Content-Type", "")))
        if not files:
            return _error(400, messages.WEB_UPLOAD_FORM)
        command = parse_command(text)
        if command is None or command.name not in _FILE_COMMANDS:
            return _error(400, messages.WEB_FILES_WITH_A_COMMAND)
        message = IncomingMessage(
            key=self._key(request),
            message_id="",
            user=self._user(request),
            text=text,
            attachments=tuple(files),
            command=command,
        )
        return await self._stream(request, message)

    async def _stream(self, request: web.Request, message: IncomingMessage) -> web.StreamResponse:
        sink = EventSink()
        target = WebReplyTarget(sink, self._manager.metrics.observer(PLATFORM))
        task = asyncio.create_task(self._handle(message, target, sink), name="web-turn")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
        await response.prepare(request)
        try:
            ended = False
            while not ended:
                # What queued up while this request waited is written at once: one write, not one per piece.
                events, ended = await sink.take()
                await response.write(encode_events([*events, ("done", {})] if ended else events))
        except (ConnectionResetError, asyncio.CancelledError):
            # The tab closed: the answer goes on in its task and is stored whole.
            sink.closed = True
            log.info("web=client_gone")
            raise
        return response

    async def _handle(self, message: IncomingMessage, target: WebReplyTarget, sink: EventSink) -> None:
        def accepted(opened: OpenTurn) -> None:
            # The page now knows which stored answer is its own: if this stream breaks off, it reads that one.
            sink.emit("accepted", {"answer_id": opened.answer_id})

        try:
            await self._manager.handle(message, target, on_accepted=accepted)
        except Exception:
            # handle() is the turn boundary and catches its own; this is only what escapes before a turn exists.
            log.exception("web=turn_failed")
            sink.emit("error", {"text": messages.TURN_FAILED})
        finally:
            sink.end()

    async def _resume_target(self, key: ConversationKey, question: MessageRecord) -> ReplyTarget | None:
        """Where a dead process's answer is finished: nowhere to stream to (its page's stream broke off with that
        process); the page reads the stored answer once it is done."""
        sink = EventSink()
        sink.closed = True
        return WebReplyTarget(sink, self._manager.metrics.observer(PLATFORM))

    async def _rate_limited(self, request: web.Request) -> web.Response | None:
        """A 429 when this client address sent more than its share of messages this minute, else None."""
        address = _address_key(request)
        if self._addresses.allow(address):
            return None
        wait = self._addresses.retry_after(address)
        log.info("web=rate_limited address=%s", request.remote)
        lang = await self._manager.language(self._key(request), app_language=_browser_language(request))
        response = _error(429, messages.rate_limited(wait, lang))
        response.headers["Retry-After"] = str(max(1, round(wait)))
        return response

    async def stop_answer(self, request: web.Request) -> web.Response:
        """Stop the answer being written in this browser's conversation."""
        key = self._key(request)
        conversation = await self._manager.existing(key)
        stopped = conversation is not None and await self._manager.stop(key, conversation.id)
        return web.json_response({"stopped": stopped})

    async def feedback(self, request: web.Request) -> web.Response:
        """Helpful or not, on one of this conversation's answers."""
        body = await _json_body(request)
        if not isinstance(body, dict) or body.get("value") not in ("up", "down"):
            return _error(400, messages.WEB_BAD_FEEDBACK)
        key = self._key(request)
        known = await self._manager.known(key)
        if not known or not await self._manager.feedback(key, str(body.get("message_id", "")), str(body["value"])):
            return _error(404, messages.WEB_NO_SUCH_ANSWER)
        return web.json_response({"ok": True})

    async def feedback_reason(self, request: web.Request) -> web.Response:
        """Why an answer of this conversation got its 👎: one of the reasons and an optional note."""
        body = await _json_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("reason"), str):
            return _error(400, messages.WEB_BAD_REASON)
        key = self._key(request)
        note = body.get("note")
        reason, message_id = str(body["reason"]), str(body.get("message_id", ""))
        note = note if isinstance(note, str) else ""
        # The conversation is this browser session's own: whoever holds it gave the 👎.
        result = await self._manager.feedback_reason(key, message_id, reason, note, by="")
        if result == "saved":
            return web.json_response({"ok": True})
        lang = await self._manager.language(key)
        status = {"gone": 404, "not_down": 409, "not_rater": 403}.get(result, 400)
        return _error(status, messages.feedback_reason_refused(result, lang, NOTE_MAX))

    async def new_conversation(self, request: web.Request) -> web.Response:
        """Start over: history is no longer used or shown."""
        if await self._manager.known(self._key(request)):
            await self._manager.reset(self._key(request))
        return web.json_response({"ok": True})

    async def admin_login(self, request: web.Request) -> web.Response:
        """Check the admin token once (a few wrong ones lock the address and session out); the proof stays in an
        HttpOnly cookie, bound to a new session id."""
        expected = self._config.admin_token
        if not expected:
            return _error(403, messages.WEB_NO_ADMIN)
        keys = (f"admin:{request.remote}", f"session:{request[_SESSION_KEY]}")
        if (wait := self._logins.locked_for(*keys)) > 0:
            log.warning("web=admin_refused reason=locked_out address=%s", request.remote)
            response = _error(429, messages.web_admin_locked(wait))
            response.headers["Retry-After"] = str(max(1, round(wait)))
            return response
        body = await _json_body(request)
        token = body.get("token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token_matches(token, expected):
            self._logins.failed(*keys)
            log.warning("web=admin_refused reason=wrong_token address=%s", request.remote)
            return _error(403, messages.WEB_WRONG_TOKEN)
        response = web.json_response({"admin": True})
        session_id = request[_SESSION_KEY]
        if not self._is_admin(request):
            # A new session id: whoever planted or learnt the old one (session fixation) does not share the admin's.
            # (A session already admin got its own at that login; a second login renews the proof only.)
            session = self._signer.new_session()
            session_id = session.split(".")[0]
            _set_cookie(request, response, SESSION_COOKIE, session, SESSION_AGE)
        _set_cookie(request, response, ADMIN_COOKIE, self._signer.admin_cookie(session_id, expected), ADMIN_AGE)
        log.info("web=admin_login address=%s", request.remote)
        return response

    async def admin_logout(self, request: web.Request) -> web.Response:
        """Revoke the admin proof (a copy of the cookie kept elsewhere is refused too) and forget it."""
        if proof := request.cookies.get(ADMIN_COOKIE):
            self._signer.revoke(proof)
            if self._revocations is not None:
                await self._revocations.revoke(proof)
        response = web.json_response({"admin": False})
        response.del_cookie(ADMIN_COOKIE, path="/")
        return response


_PAGE_HEADERS: Final = {
    # The page loads only its own assets; nothing from a server or a document may run script.
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _set_cookie(request: web.Request, response: web.StreamResponse, name: str, value: str, age: int) -> None:
    # Secure over TLS, directly or behind a trusted proxy saying so (X-Forwarded-Proto, bot.app.proxies): a loopback
    # or LAN http page must still keep its session. The server checks `age` itself too (adapters.web.session).
    response.set_cookie(name, value, max_age=age, httponly=True, samesite="Strict", secure=request.secure, path="/")


def _address_key(request: web.Request) -> str:
    # The peer, or the client a trusted proxy names (bot.app.proxies rewrote request.remote).
    return f"address:{request.remote}"


def _error(status: int, text: str) -> web.Response:
    return web.json_response({"error": text}, status=status)


async def _json_body(request: web.Request) -> Any:
    try:
        return await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        return None


async def _read_limited(part: BodyPartReader, limit: int) -> bytes | None:
    data = bytearray()
    while chunk := await part.read_chunk(256 * 1024):
        data += chunk
        if len(data) > limit:
            return None
    return bytes(data)


def _browser_language(request: web.Request) -> str:
    """The first language of the browser's Accept-Language ("zh-CN,zh;q=0.9,en;q=0.8" -> "zh-CN")."""
    first = request.headers.get("Accept-Language", "").split(",")[0]
    return first.split(";")[0].strip()


def _seconds(value: str) -> float | None:
    """A recording's length as the page measured it (None when it sent none or nonsense)."""
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _attachment(name: str, data: bytes, mime_type: str) -> Attachment:
    async def read() -> bytes:
        return data

    return Attachment(name=name, size=len(data), mime_type=mime_type, read=read)


def _history_entry(entry: TranscriptEntry) -> dict[str, Any]:
    message = entry.message
    return {
        "id": message.id,
        "role": message.role,
        "text": message.text,
        "status": message.status,
        "outcome": str(message.meta.get("outcome", "")),
        "sources": [source_json(source) for source in entry.sources],
        "feedback": message.feedback or None,
        "reason": message.feedback_reason or None,
        "rateable": message.role == "assistant" and message.meta.get("outcome") not in ("refused", "smalltalk"),
    }


def create(manager: ConversationManager, settings: Settings, database: Database) -> Adapter | None:
    """The `ragbot.adapters` entry point: the web chat is always on (it is what `make run` opens)."""
    web = WebSettings.of(settings)
    config = WebConfig(
        admin_token=web.WEB_ADMIN_TOKEN.get_secret_value() if web.WEB_ADMIN_TOKEN else None,
        access_token=web.WEB_ACCESS_TOKEN.get_secret_value() if web.WEB_ACCESS_TOKEN else None,
        upload_limit=settings.ingestion_limits().max_file_bytes,
        address_rate_limit=RateLimit(count=web.WEB_ADDRESS_RATE_LIMIT, window=60.0),
        media=settings.media_limits(),
    )

    async def signer() -> SessionSigner:
        return SessionSigner(await load_key(database, settings.data_dir))

    popular = PopularQuestions(FaqRepo(database), AnswerMetaRepo(database))
    return WebChat(manager, config, signer, SharedRevocations(LeaseRepo(database)), popular)
