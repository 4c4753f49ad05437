"""FakeTelegramBotAPI: a local Telegram Bot API (methods, long polling, files, flood limits) for PTB to talk to."""

from __future__ import annotations

import asyncio
import bisect
import copy
import itertools
import json
import math
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import aiohttp
from aiohttp import web
from multidict import MultiMapping

from fakes.base import FakeAPI, Handler
from fakes.limits import SlidingWindow, TokenBucket

__all__ = [
    "BotMessage",
    "BotRequest",
    "Draft",
    "FakeTelegramBotAPI",
    "HtmlParseError",
    "Throttle",
    "parse_html",
    "utf16_len",
]

Json = dict[str, Any]

# Bot API limits (PTB constants.MessageLimit.MAX_TEXT_LENGTH, FileSizeLimit.FILESIZE_DOWNLOAD).
MAX_TEXT_UTF16 = 4096
MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024

NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are exactly the same"
    " as a current content and reply markup of the message"
)
KICKED = "Forbidden: bot was kicked from the group chat"
BLOCKED = "Forbidden: bot was blocked by the user"
TERMINATED_BY_POLL = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
TERMINATED_BY_WEBHOOK = "Conflict: terminated by setWebhook request"
WEBHOOK_ACTIVE = (
    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"
)
# The Bot API's answer to sendMessageDraft outside a private chat (seen in nullclaw/nullclaw#626).
DRAFT_PEER_INVALID = "Bad Request: TEXTDRAFT_PEER_INVALID"

_DEFAULT_DESCRIPTIONS = {
    400: "Bad Request: scripted failure",
    401: "Unauthorized",
    403: KICKED,
    404: "Not Found",
    409: TERMINATED_BY_POLL,
    500: "Internal Server Error",
    502: "Bad Gateway",
}
# Methods that post or change a visible message, and so count against flood control (Bot FAQ: edits count too).
_FLOODED = frozenset(
    {
        "sendmessage",
        "editmessagetext",
        "editmessagecaption",
        "editmessagereplymarkup",
        "sendmessagedraft",
        "senddocument",
        "sendphoto",
        "sendsticker",
        "sendvoice",
        "copymessage",
        "forwardmessage",
    }
)
# Form and query values arrive as strings; these are JSON-serialised (PTB dumps every non-string parameter).
_JSON_FIELDS = frozenset(
    {
        "reply_markup",
        "entities",
        "caption_entities",
        "allowed_updates",
        "commands",
        "scope",
        "reply_parameters",
        "link_preview_options",
    }
)
_INT_FIELDS = frozenset(
    {
        "chat_id",
        "message_id",
        "message_thread_id",
        "draft_id",
        "offset",
        "limit",
        "timeout",
        "user_id",
        "reply_to_message_id",
        "cache_time",
        "max_connections",
    }
)
_BOOL_FIELDS = frozenset({"drop_pending_updates", "show_alert", "disable_notification", "allow_sending_without_reply"})
# Updates Telegram leaves out unless allowed_updates names them (getUpdates docs).
_OPT_IN_UPDATES = frozenset({"chat_member", "message_reaction", "message_reaction_count"})
_CHAT_ACTIONS = frozenset(
    {
        "typing",
        "upload_photo",
        "record_video",
        "upload_video",
        "record_voice",
        "upload_voice",
        "upload_document",
        "choose_sticker",
        "find_location",
        "record_video_note",
        "upload_video_note",
    }
)
_SECRET_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,256}")
_COMMAND = re.compile(r"[a-z0-9_]{1,32}")
_TOKEN = re.compile(r"\d+:[A-Za-z0-9_-]+")
_INCOMING_ENTITIES = re.compile(
    r"(?P<bot_command>(?<!\S)/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{3,32})?)|(?P<mention>(?<![\w@])@[A-Za-z0-9_]{5,32})"
)


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit of Telegram's text limits and entity offsets."""
    return len(text.encode("utf-16-le")) // 2


# --- Telegram's HTML parse mode -------------------------------------------------------------------------------------


class HtmlParseError(ValueError):
    """Text that Telegram's HTML parse mode rejects; str() is the detail after "can't parse entities: "."""


_HTML_ENTITY_TYPES = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
    "code": "code",
    "pre": "pre",
    "a": "text_link",
    "blockquote": "blockquote",
    "tg-emoji": "custom_emoji",
}
_NAMED_CHARACTERS = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}


@dataclass(slots=True)
class _OpenTag:
    name: str
    offset: int
    attributes: dict[str, str]
    language: str | None = None


def _decode_character(source: str, at: int) -> tuple[str, int] | None:
    """The character an `&...;` reference at `at` stands for and where it ends; None leaves the `&` literal."""
    match = re.match(r"&(?:#x([0-9a-fA-F]{1,8})|#([0-9]{1,8})|([A-Za-z]+));?", source[at:])
    if match is None:
        return None
    hexa, decimal, name = match.groups()
    if name is not None:
        char = _NAMED_CHARACTERS.get(name)  # Telegram knows only these four names; others stay as written
        return (char, at + match.end()) if char is not None else None
    code = int(hexa, 16) if hexa is not None else int(decimal)
    if code == 0 or code >= 0x10FFFF:
        return None
    return chr(code), at + match.end()


def parse_html(source: str) -> tuple[str, list[Json]]:
    """Telegram's HTML parse mode (tdlib parse_html): the plain text and its entities, or HtmlParseError.

    Error texts follow tdlib's: unsupported and unclosed tags, unexpected or mismatched end tags, and tags left open.
    """
    text: list[str] = []
    offset = 0  # in UTF-16 units, like every entity offset
    entities: list[Json] = []
    stack: list[_OpenTag] = []
    index, size = 0, len(source)

    def byte_offset(at: int) -> int:
        return len(source[:at].encode())

    while index < size:
        char = source[index]
        if char == "&" and (decoded := _decode_character(source, index)) is not None:
            text.append(decoded[0])
            offset += utf16_len(decoded[0])
            index = decoded[1]
            continue
        if char != "<":
            text.append(char)
            offset += utf16_len(char)
            index += 1
            continue
        begin = index
        if source.startswith("</", index):
            end = index + 2
            while end < size and not source[end].isspace() and source[end] != ">":
                end += 1
            name = source[index + 2 : end].lower()
            while end < size and source[end].isspace():
                end += 1
            if end >= size or source[end] != ">":
                raise HtmlParseError(f"Unclosed end tag at byte offset {byte_offset(begin)}")
            if not stack:
                raise HtmlParseError(f"Unexpected end tag at byte offset {byte_offset(begin)}")
            tag = stack.pop()
            if name and name != tag.name:
                raise HtmlParseError(
                    f"Unmatched end tag at byte offset {byte_offset(begin)},"
                    f' expected "</{tag.name}>", found "</{name}>"'
                )
            if tag.name == "code" and stack and stack[-1].name == "pre" and tag.language:
                stack[-1].language = tag.language  # <pre><code class="language-x"> is one pre entity with a language
            elif offset > tag.offset:
                entities.append(_html_entity(tag, offset))
            index = end + 1
            continue
        end = index + 1
        while end < size and not source[end].isspace() and source[end] != ">":
            end += 1
        if end >= size:
            raise HtmlParseError(f"Unclosed start tag at byte offset {byte_offset(begin)}")
        name = source[index + 1 : end].lower()
        if name not in _HTML_ENTITY_TYPES:
            raise HtmlParseError(f'Unsupported start tag "{name}" at byte offset {byte_offset(begin)}')
        attributes, index = _html_attributes(source, end, name, byte_offset(begin))
        if name == "span" and attributes.get("class") != "tg-spoiler":
            raise HtmlParseError(f'Tag "span" must have class "tg-spoiler" at byte offset {byte_offset(begin)}')
        language = attributes.get("class", "")
        stack.append(_OpenTag(name, offset, attributes, language.removeprefix("language-") if name == "code" else None))
    if stack:
        raise HtmlParseError(f'Can\'t find end tag corresponding to start tag "{stack[-1].name}"')
    entities.sort(key=lambda entity: (entity["offset"], -entity["length"]))
    return "".join(text), entities


def _html_attributes(source: str, index: int, tag: str, begin: int) -> tuple[dict[str, str], int]:
    """The attributes of the start tag whose name ends at `index`, and the position after its `>`."""
    attributes: dict[str, str] = {}
    size = len(source)
    while True:
        while index < size and source[index].isspace():
            index += 1
        if index >= size:
            raise HtmlParseError(f"Unclosed start tag at byte offset {begin}")
        if source[index] == ">":
            return attributes, index + 1
        start = index
        while index < size and not source[index].isspace() and source[index] not in "=>":
            index += 1
        name = source[start:index].lower()
        while index < size and source[index].isspace():
            index += 1
        if index >= size or source[index] != "=":
            if tag == "blockquote" and name == "expandable":
                attributes[name] = ""
                continue
            raise HtmlParseError(
                f'Expected equal sign in declaration of an attribute of the tag "{tag}" at byte offset {begin}'
            )
        index += 1
        while index < size and source[index].isspace():
            index += 1
        if index >= size:
            raise HtmlParseError(f"Unclosed start tag at byte offset {begin}")
        if source[index] in "\"'":
            quote = source[index]
            close = source.find(quote, index + 1)
            if close < 0:
                raise HtmlParseError(f"Unclosed start tag at byte offset {begin}")
            value = re.sub(r"&(lt|gt|amp|quot);", lambda m: _NAMED_CHARACTERS[m[1]], source[index + 1 : close])
            index = close + 1
        else:
            match = re.match(r"[A-Za-z0-9.-]*", source[index:])
            value = match[0].lower() if match else ""
            index += len(value)
        attributes[name] = value


def _html_entity(tag: _OpenTag, end: int) -> Json:
    entity: Json = {"type": _HTML_ENTITY_TYPES[tag.name], "offset": tag.offset, "length": end - tag.offset}
    if tag.name == "a":
        entity["url"] = tag.attributes.get("href", "")
    elif tag.name == "pre" and tag.language:
        entity["language"] = tag.language
    elif tag.name == "tg-emoji":
        entity["custom_emoji_id"] = tag.attributes.get("emoji-id", "")
    elif tag.name == "blockquote" and "expandable" in tag.attributes:
        entity["type"] = "expandable_blockquote"
    return entity


def _strip(text: str, entities: list[Json]) -> tuple[str, list[Json]]:
    """Telegram trims surrounding whitespace from message text; entities move and shrink with it."""
    stripped = text.strip()
    lead = utf16_len(text[: len(text) - len(text.lstrip())])
    length = utf16_len(stripped)
    kept = []
    for entity in entities:
        start = max(entity["offset"] - lead, 0)
        end = min(entity["offset"] + entity["length"] - lead, length)
        if end > start:
            kept.append({**entity, "offset": start, "length": end - start})
    return stripped, kept


def _incoming_entities(text: str) -> list[Json]:
    """The bot_command and mention entities Telegram attaches to a user's message."""
    return [
        {"type": match.lastgroup, "offset": utf16_len(text[: match.start()]), "length": utf16_len(match[0])}
        for match in _INCOMING_ENTITIES.finditer(text)
    ]


# --- Records the tests read -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BotRequest:
    """One call as the fake received it: the Bot API method (or "file" for a download), its parameters, when."""

    method: str
    params: Json
    time: float
    http_method: str
    path: str
    content_type: str


@dataclass(slots=True)
class BotMessage:
    """A message the bot sent, as it stands now; `history` holds every text it has shown, first to last."""

    chat_id: int
    message_id: int
    text: str
    entities: list[Json]
    reply_markup: Json | None
    date: int
    thread_id: int | None = None
    reply_to: int | None = None
    edit_date: int | None = None
    deleted: bool = False
    history: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Draft:
    """One sendMessageDraft call that Telegram accepted."""

    chat_id: int
    draft_id: int
    text: str
    thread_id: int | None
    time: float


@dataclass(frozen=True, slots=True)
class Throttle:
    """One 429 the fake answered: which method and chat, which limit (chat, group, global or scripted), for how long."""

    method: str
    chat_id: int | str | None
    scope: str
    retry_after: int
    time: float


@dataclass(frozen=True, slots=True)
class StoredFile:
    """A file the bot can fetch with getFile and download from /file/bot<token>/<file_path>."""

    file_id: str
    file_unique_id: str
    file_path: str
    name: str
    mime: str
    data: bytes
    size: int


@dataclass(frozen=True, slots=True)
class Webhook:
    """The webhook setWebhook registered."""

    url: str
    secret_token: str | None
    allowed_updates: list[str] | None
    max_connections: int


@dataclass(frozen=True, slots=True)
class _Scripted:
    method: str | None  # lower-case Bot API method, or None for the next call of any method
    status: int
    description: str | None
    retry_after: int | None
    delay: float | None = None


class _ApiError(Exception):
    def __init__(self, status: int, description: str, parameters: Json | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.parameters = parameters


@dataclass(slots=True)
class _Poll:
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    conflict: str | None = None


# --- Flood control --------------------------------------------------------------------------------------------------


class _FloodControl:
    """Telegram's documented limits: ~1 message/s per chat (short bursts pass), 20/min per group, 30/s overall."""

    def __init__(
        self,
        *,
        chat_interval: float,
        chat_burst: int,
        group_per_minute: int,
        global_per_second: int,
        clock: Callable[[], float],
    ) -> None:
        self._interval = chat_interval
        self._burst = chat_burst
        self._group_limit = group_per_minute
        self._clock = clock
        self._chats: dict[int | str, TokenBucket] = {}
        self._groups: dict[int | str, SlidingWindow] = {}
        self._global = SlidingWindow(global_per_second, 1.0)

    def admit(self, chat_id: int | str | None) -> tuple[str, int] | None:
        """None, counting the message, when every limit has room; else the limit hit and seconds to wait."""
        now = self._clock()
        waits: list[tuple[float, str]] = []
        if (wait := self._global.wait(now)) is not None:
            waits.append((wait, "global"))
        if chat_id is not None:
            bucket = self._chats.setdefault(chat_id, TokenBucket(self._burst, self._interval))
            if (wait := bucket.wait(now)) is not None:
                waits.append((wait, "chat"))
            if _is_group(chat_id):
                window = self._groups.setdefault(chat_id, SlidingWindow(self._group_limit, 60.0))
                if (wait := window.wait(now)) is not None:
                    waits.append((wait, "group"))
        if waits:
            wait, scope = max(waits)
            return scope, max(1, math.ceil(wait))  # Telegram's retry_after is whole seconds
        self._global.count(now)
        if chat_id is not None:
            self._chats[chat_id].count(now)
            if _is_group(chat_id):
                self._groups[chat_id].count(now)
        return None


def _is_group(chat_id: int | str) -> bool:
    return isinstance(chat_id, int) and chat_id < 0


# --- The fake -------------------------------------------------------------------------------------------------------

_PARAMS = web.RequestKey("params", dict)
_METHOD = web.RequestKey("method", str)

DEFAULT_TOKEN = "123456789:AAF-fake_token_for_ragbot_tests"
DEFAULT_USER: Json = {"id": 1001, "is_bot": False, "first_name": "Alice", "username": "alice", "language_code": "en"}
DEFAULT_GROUP = -1001234567890


class FakeTelegramBotAPI(FakeAPI):
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
        super().__init__(api_key=token)
        self.token = token
        self.bot_user: Json = {
            "id": int(token.split(":", 1)[0]),
            "is_bot": True,
            "first_name": first_name,
            "username": username,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
            "can_connect_to_business": False,
            "has_main_web_app": False,
        }
        self.limits_on = limits_on
        self.requests: list[BotRequest] = []  # type: ignore[assignment]  # Bot API calls, not raw HTTP requests
        self.throttled: list[Throttle] = []
        self.draft_log: list[Draft] = []
        self.chat_actions: list[tuple[int, str, int | None]] = []
        self.callback_answers: dict[str, Json] = {}
        self.webhook: Webhook | None = None
        self.webhook_deliveries: list[tuple[int, int]] = []  # (update_id, HTTP status)
        self._clock = clock
        self._flood = _FloodControl(
            chat_interval=chat_interval,
            chat_burst=chat_burst,
            group_per_minute=group_per_minute,
            global_per_second=global_per_second,
            clock=clock,
        )
        self._scripted: list[_Scripted] = []
        self._chats: dict[int, Json] = {}
        self._users: dict[int, Json] = {int(DEFAULT_USER["id"]): dict(DEFAULT_USER)}
        self._members: dict[tuple[int, int], str] = {}
        self._blocked: set[int] = set()
        self._next_message_id: dict[int, int] = {}
        self._bot_messages: dict[tuple[int, int], BotMessage] = {}
        self._user_messages: dict[tuple[int, int], Json] = {}
        self._drafts: dict[tuple[int, int], Draft] = {}
        self._commands: dict[tuple[str, str], list[Json]] = {}
        self._files: dict[str, StoredFile] = {}
        self._files_by_path: dict[str, StoredFile] = {}
        self._pending_callbacks: set[str] = set()
        self._updates: list[Json] = []
        self._update_ids = itertools.count(10_000)
        self._allowed_updates: set[str] | None = None
        self._poll: _Poll | None = None
        self._ids = itertools.count(1)
        self._methods: dict[str, Callable[[Json], Awaitable[Any]]] = {
            name.lower(): handler
            for name, handler in {
                "getMe": self._get_me,
                "logOut": self._true,
                "close": self._true,
                "getUpdates": self._get_updates,
                "setWebhook": self._set_webhook,
                "deleteWebhook": self._delete_webhook,
                "getWebhookInfo": self._get_webhook_info,
                "setMyCommands": self._set_my_commands,
                "getMyCommands": self._get_my_commands,
                "deleteMyCommands": self._delete_my_commands,
                "sendMessage": self._send_message,
                "editMessageText": self._edit_message_text,
                "editMessageReplyMarkup": self._edit_message_reply_markup,
                "sendMessageDraft": self._send_message_draft,
                "sendChatAction": self._send_chat_action,
                "deleteMessage": self._delete_message,
                "getFile": self._get_file,
                "answerCallbackQuery": self._answer_callback_query,
                "getChat": self._get_chat,
                "getChatMember": self._get_chat_member,
                "getChatAdministrators": self._get_chat_administrators,
            }.items()
        }

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

    def delay_next(self, seconds: float, *, method: str | None = None) -> None:
        """Hold the next call (of `method`, or of any method) this long before handling it."""
        self._scripted.append(_Scripted(method.lower() if method else None, 0, None, None, delay=seconds))

    def block_chat(self, chat_id: int) -> None:
        """From now on sends to this chat fail with 403: kicked from a group, blocked by a private user."""
        self._blocked.add(chat_id)

    # --- Transcript -------------------------------------------------------------------------------------------------

    def bot_messages(self, chat_id: int, thread_id: int | None = None) -> list[BotMessage]:
        """The bot's messages in a chat (in one topic when thread_id is given) that still exist, oldest first."""
        return [
            message
            for (chat, _), message in sorted(self._bot_messages.items())
            if chat == chat_id and not message.deleted and (thread_id is None or message.thread_id == thread_id)
        ]

    def visible(self, chat_id: int, thread_id: int | None = None) -> list[str]:
        """What a user sees from the bot in a chat: each existing message's current text, oldest first."""
        return [message.text for message in self.bot_messages(chat_id, thread_id)]

    def drafts(self, chat_id: int) -> dict[int, str]:
        """The latest text of each draft in a chat, by draft_id."""
        return {draft_id: draft.text for (chat, draft_id), draft in self._drafts.items() if chat == chat_id}

    def commands(self, scope: Json | None = None, language_code: str = "") -> list[Json]:
        """The command menu set for a scope (default scope when None) and language."""
        return self._commands.get((_scope_key(scope), language_code), [])

    def calls(self, method: str) -> list[BotRequest]:
        """The recorded calls of one Bot API method."""
        return [request for request in self.requests if request.method.lower() == method.lower()]

    @property
    def rate_limited(self) -> int:
        """How many 429s the fake has answered (flood control and scripted)."""
        return len(self.throttled)

    @property
    def pending_updates(self) -> int:
        """Updates queued and not yet confirmed by a getUpdates offset."""
        return len(self._updates)

    @property
    def polling(self) -> bool:
        """Whether a getUpdates call is being held open right now."""
        return self._poll is not None

    # --- Updates in -------------------------------------------------------------------------------------------------

    def queue_update(self, update: Json) -> Json:
        """Queue an update for getUpdates (kept in update_id order, as Telegram's queue is); returns it.

        The builders number their updates; a hand-written update without an update_id gets the next one in place.
        """
        self._assign_update_id(update)
        bisect.insort(self._updates, update, key=lambda queued: queued["update_id"])
        if self._poll is not None:
            self._poll.wake.set()
        self._notify()
        return update

    async def post_webhook(self, url: str, update: Json, secret: str | None = None) -> int:
        """POST an update to a webhook endpoint as Telegram does (secret in X-Telegram-Bot-Api-Secret-Token).

        Gives the update an update_id in place if it has none, so posting it again is a redelivery. Returns the status.
        """
        self._assign_update_id(update)
        headers = {"X-Telegram-Bot-Api-Secret-Token": secret} if secret is not None else {}
        async with aiohttp.ClientSession() as session, session.post(url, json=update, headers=headers) as response:
            await response.read()
        self.webhook_deliveries.append((update["update_id"], response.status))
        self._notify()
        return response.status

    async def deliver_webhook(self, update: Json) -> int:
        """POST an update to the webhook setWebhook registered, with its secret token."""
        if self.webhook is None:
            raise RuntimeError("no webhook is set")
        return await self.post_webhook(self.webhook.url, update, self.webhook.secret_token)

    def _assign_update_id(self, update: Json) -> None:
        if "update_id" not in update:
            update["update_id"] = next(self._update_ids)

    def _update(self, payload: Json) -> Json:
        """An update around one payload, numbered now (Telegram numbers updates as they happen)."""
        return {"update_id": next(self._update_ids), **payload}

    # --- Builders of realistic updates (each numbered when built) ---------------------------------------------------

    def user(self, user_id: int = 1001, first_name: str = "Alice", username: str | None = "alice") -> Json:
        """A User, remembered so getChatMember can find it."""
        user: Json = {"id": user_id, "is_bot": False, "first_name": first_name, "language_code": "en"}
        if username:
            user["username"] = username
        self._users[user_id] = user
        return dict(user)

    def group(self, chat_id: int = DEFAULT_GROUP, title: str = "Test group", *, forum: bool = False) -> Json:
        """A supergroup (or a basic group for ids not starting -100), remembered for getChat."""
        kind = "supergroup" if str(chat_id).startswith("-100") else "group"
        chat: Json = {"id": chat_id, "title": title, "type": kind}
        if forum:
            chat["is_forum"] = True
        self._chats[chat_id] = chat
        return dict(chat)

    def set_member(self, chat_id: int, user: Json, status: str = "member") -> None:
        """Record a user's status in a chat: creator, administrator, member, restricted, left or kicked."""
        self._users[int(user["id"])] = user
        self._members[(chat_id, int(user["id"]))] = status

    def private_message(self, text: str, *, user: Json | None = None, reply_to: int | None = None) -> Json:
        """An update with a user's text message in their private chat with the bot."""
        sender = user or DEFAULT_USER
        return self._update(
            {"message": self._incoming(self._private_chat(sender), sender, text=text, reply_to=reply_to)}
        )

    def group_message(
        self,
        text: str,
        *,
        chat_id: int = DEFAULT_GROUP,
        user: Json | None = None,
        mention: bool = True,
        thread_id: int | None = None,
        reply_to: int | None = None,
    ) -> Json:
        """An update with a group message; with `mention` it starts with @botname (privacy mode lets it through)."""
        mention_text = f"@{self.bot_user['username']}"
        if mention and mention_text not in text:
            text = f"{mention_text} {text}"
        sender = user or DEFAULT_USER
        chat = self._chats.get(chat_id) or self.group(chat_id, forum=thread_id is not None)
        return self._update(
            {"message": self._incoming(chat, sender, text=text, reply_to=reply_to, thread_id=thread_id)}
        )

    def reply_to_bot(self, message_id: int, text: str, *, chat_id: int | None = None, user: Json | None = None) -> Json:
        """An update with a user's reply to one of the bot's messages (delivered in groups even without a mention)."""
        sender = user or DEFAULT_USER
        chat_id = chat_id if chat_id is not None else int(sender["id"])
        if chat_id > 0:
            return self.private_message(text, user=sender, reply_to=message_id)
        thread_id = self._bot_messages[(chat_id, message_id)].thread_id
        return self.group_message(
            text, chat_id=chat_id, user=sender, mention=False, reply_to=message_id, thread_id=thread_id
        )

    def topic_message(self, text: str, *, thread_id: int, chat_id: int = DEFAULT_GROUP, **kwargs: Any) -> Json:
        """An update with a message in a forum topic (message_thread_id, is_topic_message)."""
        if chat_id not in self._chats or not self._chats[chat_id].get("is_forum"):
            self.group(chat_id, self._chats.get(chat_id, {}).get("title", "Test forum"), forum=True)
        return self.group_message(text, chat_id=chat_id, thread_id=thread_id, **kwargs)

    def document_message(
        self, file_id: str, *, caption: str | None = None, chat_id: int | None = None, user: Json | None = None
    ) -> Json:
        """An update with a document (from add_file) and an optional caption, e.g. "/ingest"."""
        stored = self._files[file_id]
        document = {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "file_name": stored.name,
            "mime_type": stored.mime,
            "file_size": stored.size,
        }
        return self._media_update({"document": document}, caption, chat_id, user)

    def photo_message(
        self, file_id: str, *, caption: str | None = None, chat_id: int | None = None, user: Json | None = None
    ) -> Json:
        """An update with a photo: a thumbnail and the full size, both downloadable."""
        stored = self._files[file_id]
        thumb = self.add_file(stored.data[:1024], f"thumb_{stored.name}", stored.mime)
        sizes = [
            {**self._file_fields(thumb), "width": 90, "height": 68},
            {**self._file_fields(file_id), "width": 1280, "height": 960},
        ]
        return self._media_update({"photo": sizes}, caption, chat_id, user)

    def voice_message(
        self, file_id: str, *, duration: int = 3, chat_id: int | None = None, user: Json | None = None
    ) -> Json:
        """An update with a voice note (OGG/Opus)."""
        voice = {**self._file_fields(file_id), "duration": duration, "mime_type": self._files[file_id].mime}
        return self._media_update({"voice": voice}, None, chat_id, user)

    def sticker_message(self, *, emoji: str = "👍", chat_id: int | None = None, user: Json | None = None) -> Json:
        """An update with a regular (static WebP) sticker."""
        file_id = self.add_file(b"RIFF\x00\x00\x00\x00WEBPVP8 ", "sticker.webp", "image/webp")
        sticker = {
            **self._file_fields(file_id),
            "type": "regular",
            "width": 512,
            "height": 512,
            "is_animated": False,
            "is_video": False,
            "emoji": emoji,
            "set_name": "RagbotTestPack",
        }
        return self._media_update({"sticker": sticker}, None, chat_id, user)

    def callback_query(self, data: str, *, message_id: int, chat_id: int, user: Json | None = None) -> Json:
        """An update for a press on an inline button under one of the bot's messages."""
        query_id = str(4_000_000_000 + next(self._ids))
        self._pending_callbacks.add(query_id)
        message = self._message_json(self._bot_messages[(chat_id, message_id)])
        return self._update(
            {
                "callback_query": {
                    "id": query_id,
                    "from": user or DEFAULT_USER,
                    "message": message,
                    "chat_instance": str(abs(chat_id) * 7919),
                    "data": data,
                }
            }
        )

    def edited_message(self, update: Json, text: str) -> Json:
        """An edited_message update for the message in `update`, now saying `text`."""
        original = update.get("message") or update["edited_message"]
        edited = {
            **original,
            "text": text,
            "edit_date": int(time.time()),
            "entities": _incoming_entities(text),
        }
        if not edited["entities"]:
            del edited["entities"]
        self._user_messages[(edited["chat"]["id"], edited["message_id"])] = edited
        return self._update({"edited_message": edited})

    def add_file(
        self, data: bytes, name: str = "file.bin", mime: str = "application/octet-stream", *, size: int | None = None
    ) -> str:
        """Store a file and return its file_id; `size` overrides the reported size (to test the 20 MB limit)."""
        number = next(self._ids)
        folder = {"image": "photos", "audio": "voice"}.get(mime.split("/", 1)[0], "documents")
        suffix = name.rsplit(".", 1)[-1] if "." in name else "bin"
        stored = StoredFile(
            file_id=f"BQACAgIAAx0Cfake{number:06d}",
            file_unique_id=f"AgADfake{number:06d}",
            file_path=f"{folder}/file_{number}.{suffix}",
            name=name,
            mime=mime,
            data=data,
            size=len(data) if size is None else size,
        )
        self._files[stored.file_id] = stored
        self._files_by_path[stored.file_path] = stored
        return stored.file_id

    def _file_fields(self, file_id: str) -> Json:
        stored = self._files[file_id]
        return {"file_id": stored.file_id, "file_unique_id": stored.file_unique_id, "file_size": stored.size}

    def _media_update(self, media: Json, caption: str | None, chat_id: int | None, user: Json | None) -> Json:
        sender = user or DEFAULT_USER
        chat = self._private_chat(sender) if chat_id is None or chat_id > 0 else self._chat(chat_id)
        message = self._incoming(chat, sender, text=None)
        message.update(media)
        if caption:
            message["caption"] = caption
            if entities := _incoming_entities(caption):
                message["caption_entities"] = entities
        return self._update({"message": message})

    def _private_chat(self, user: Json) -> Json:
        self._users[int(user["id"])] = user
        chat: Json = {"id": user["id"], "first_name": user["first_name"], "type": "private"}
        if "username" in user:
            chat["username"] = user["username"]
        self._chats[int(user["id"])] = chat
        return chat

    def _incoming(
        self,
        chat: Json,
        user: Json,
        *,
        text: str | None,
        reply_to: int | None = None,
        thread_id: int | None = None,
    ) -> Json:
        """A user's message, numbered in the chat's sequence and remembered for replies and edits."""
        chat_id = int(chat["id"])
        if chat_id < 0 and (chat_id, int(user["id"])) not in self._members:
            self.set_member(chat_id, user)
        message: Json = {
            "message_id": self._take_message_id(chat_id),
            "from": user,
            "chat": dict(chat),
            "date": int(time.time()),
        }
        if thread_id is not None:
            message["message_thread_id"] = thread_id
            message["is_topic_message"] = True
        if reply_to is not None:
            message["reply_to_message"] = self._lookup(chat_id, reply_to)
        if text is not None:
            message["text"] = text
            if entities := _incoming_entities(text):
                message["entities"] = entities
        self._user_messages[(chat_id, message["message_id"])] = message
        return message

    # --- Request handling -------------------------------------------------------------------------------------------

    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Record the call, check the token in the path, apply scripted faults and flood control."""
        route = request.match_info
        is_file = request.path.startswith("/file/")
        try:
            params = {} if is_file else await _read_params(request)
        except _ApiError as exc:
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
        scripted = next((fault for fault in self._scripted if fault.method in (None, key)), None)
        if scripted is not None:
            self._scripted.remove(scripted)
            if scripted.delay is not None:
                await self._hold(scripted.delay)
            elif scripted.status == 429:
                wait = scripted.retry_after or 1
                self._throttle(method, params.get("chat_id"), "scripted", wait)
                return self.error(
                    429, scripted.description or f"Too Many Requests: retry after {wait}", retry_after=wait
                )
            else:
                description = scripted.description or _DEFAULT_DESCRIPTIONS.get(scripted.status, "Scripted failure")
                return self.error(scripted.status, description)
        if self.limits_on and key in _FLOODED:
            chat_id = params.get("chat_id")
            hit = self._flood.admit(chat_id if isinstance(chat_id, int | str) else None)
            if hit is not None:
                scope, wait = hit
                self._throttle(method, chat_id, scope, wait)
                return self.error(429, f"Too Many Requests: retry after {wait}", retry_after=wait)
        return await handler(request)

    def _throttle(self, method: str, chat_id: Any, scope: str, wait: int) -> None:
        self.throttled.append(Throttle(method, chat_id, scope, wait, self._clock()))
        self._notify()

    async def _call(self, request: web.Request) -> web.StreamResponse:
        handler = self._methods[request[_METHOD].lower()]
        try:
            result = await handler(request[_PARAMS])
        except _ApiError as exc:
            body: Json = {"ok": False, "error_code": exc.status, "description": exc.description}
            if exc.parameters:
                body["parameters"] = exc.parameters
            return web.json_response(body, status=exc.status)
        finally:
            self._notify()
        if isinstance(result, _WithDescription):
            return web.json_response({"ok": True, "result": result.result, "description": result.description})
        return web.json_response({"ok": True, "result": result})

    async def _download(self, request: web.Request) -> web.StreamResponse:
        stored = self._files_by_path.get(request.match_info["path"])
        if stored is None:
            return self.error(404, "Not Found")
        return web.Response(body=stored.data, content_type=stored.mime)

    async def _not_found(self, request: web.Request) -> web.StreamResponse:
        return self.error(404, "Not Found")

    # --- Methods ----------------------------------------------------------------------------------------------------

    async def _true(self, params: Json) -> bool:
        return True

    async def _get_me(self, params: Json) -> Json:
        return self.bot_user

    async def _get_updates(self, params: Json) -> list[Json]:
        if self.webhook is not None:
            raise _ApiError(409, WEBHOOK_ACTIVE)
        offset = _optional_int(params, "offset") or 0
        limit = min(max(_optional_int(params, "limit") or 100, 1), 100)
        timeout = max(_optional_int(params, "timeout") or 0, 0)
        if params.get("allowed_updates") is not None:  # Telegram remembers the last list it was given
            self._allowed_updates = set(params["allowed_updates"]) or None
        if offset > 0:
            self._updates = [update for update in self._updates if update["update_id"] >= offset]
        elif offset < 0:
            self._updates = self._updates[offset:]
        batch = self._deliverable(limit)
        if batch or timeout == 0:
            return batch
        # tdlib's bot API server: a new waiting getUpdates ends the one already held, which gets the 409.
        if self._poll is not None:
            self._poll.conflict = TERMINATED_BY_POLL
            self._poll.wake.set()
        poll = self._poll = _Poll()
        self._notify()
        try:
            async with asyncio.timeout(timeout):
                while not (batch := self._deliverable(limit)) and not self._closing.is_set():
                    await poll.wake.wait()
                    poll.wake.clear()
                    if poll.conflict is not None:
                        raise _ApiError(409, poll.conflict)
        except TimeoutError:
            return []
        finally:
            if self._poll is poll:
                self._poll = None
        return batch

    def _deliverable(self, limit: int) -> list[Json]:
        """The next updates the poller may see; updates of types it did not allow are dropped, as Telegram does."""
        allowed = self._allowed_updates
        self._updates = [
            update
            for update in self._updates
            if (kind := _update_kind(update)) is None
            or (kind in allowed if allowed is not None else kind not in _OPT_IN_UPDATES)
        ]
        return copy.deepcopy(self._updates[:limit])

    async def _set_webhook(self, params: Json) -> _WithDescription:
        url = str(params.get("url") or "")
        if not url:
            return await self._delete_webhook(params)
        secret = params.get("secret_token")
        if secret is not None and not _SECRET_TOKEN.fullmatch(str(secret)):
            raise _ApiError(400, "Bad Request: secret token contains unallowed characters")
        if params.get("drop_pending_updates"):
            self._updates.clear()
        if self._poll is not None:
            self._poll.conflict = TERMINATED_BY_WEBHOOK
            self._poll.wake.set()
        self.webhook = Webhook(
            url, secret, params.get("allowed_updates"), _optional_int(params, "max_connections") or 40
        )
        return _WithDescription(True, "Webhook was set")

    async def _delete_webhook(self, params: Json) -> _WithDescription:
        if params.get("drop_pending_updates"):
            self._updates.clear()
        was_set, self.webhook = self.webhook is not None, None
        return _WithDescription(True, "Webhook was deleted" if was_set else "Webhook is already deleted")

    async def _get_webhook_info(self, params: Json) -> Json:
        info: Json = {"url": "", "has_custom_certificate": False, "pending_update_count": len(self._updates)}
        if self.webhook is not None:
            info.update(url=self.webhook.url, max_connections=self.webhook.max_connections)
            if self.webhook.allowed_updates is not None:
                info["allowed_updates"] = self.webhook.allowed_updates
        return info

    async def _set_my_commands(self, params: Json) -> bool:
        commands = params.get("commands")
        if not isinstance(commands, list):
            raise _ApiError(400, "Bad Request: commands is empty")
        if len(commands) > 100:
            raise _ApiError(400, "Bad Request: BOT_COMMANDS_TOO_MUCH")
        for command in commands:
            if not _COMMAND.fullmatch(str(command.get("command", ""))):
                raise _ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
            if not 1 <= len(str(command.get("description", ""))) <= 256:
                raise _ApiError(400, "Bad Request: command description is empty")
        self._commands[(_scope_key(params.get("scope")), str(params.get("language_code") or ""))] = commands
        return True

    async def _get_my_commands(self, params: Json) -> list[Json]:
        return self.commands(params.get("scope"), str(params.get("language_code") or ""))

    async def _delete_my_commands(self, params: Json) -> bool:
        self._commands.pop((_scope_key(params.get("scope")), str(params.get("language_code") or "")), None)
        return True

    async def _send_message(self, params: Json) -> Json:
        chat_id = self._target_chat(params)
        text, entities = _message_text(params, "text")
        thread_id = _optional_int(params, "message_thread_id")
        reply_to = self._reply_target(chat_id, params)
        message = BotMessage(
            chat_id=chat_id,
            message_id=self._take_message_id(chat_id),
            text=text,
            entities=entities,
            reply_markup=_inline_markup(params.get("reply_markup")),
            date=int(time.time()),
            thread_id=thread_id,
            reply_to=reply_to,
            history=[text],
        )
        self._bot_messages[(chat_id, message.message_id)] = message
        return self._message_json(message)

    async def _edit_message_text(self, params: Json) -> Json:
        message = self._editable(params)
        text, entities = _message_text(params, "text")
        markup = _inline_markup(params.get("reply_markup"))  # an edit without reply_markup removes the keyboard
        if (text, entities, markup) == (message.text, message.entities, message.reply_markup):
            raise _ApiError(400, NOT_MODIFIED)
        message.text, message.entities, message.reply_markup = text, entities, markup
        message.edit_date = int(time.time())
        message.history.append(text)
        return self._message_json(message)

    async def _edit_message_reply_markup(self, params: Json) -> Json:
        message = self._editable(params)
        markup = _inline_markup(params.get("reply_markup"))
        if markup == message.reply_markup:
            raise _ApiError(400, NOT_MODIFIED)
        message.reply_markup = markup
        message.edit_date = int(time.time())
        return self._message_json(message)

    async def _send_message_draft(self, params: Json) -> bool:
        chat_id = self._target_chat(params)
        if chat_id <= 0:
            raise _ApiError(400, DRAFT_PEER_INVALID)
        draft_id = _required_int(params, "draft_id")
        if draft_id == 0:
            raise _ApiError(400, "Bad Request: draft_id must be non-zero")
        # Bot API 10.0: text is optional (empty shows "Thinking..."), at most 4096 characters after parsing.
        text, _ = _message_text(params, "text", allow_empty=True)
        draft = Draft(chat_id, draft_id, text, _optional_int(params, "message_thread_id"), self._clock())
        self.draft_log.append(draft)
        self._drafts[(chat_id, draft_id)] = draft
        return True

    async def _send_chat_action(self, params: Json) -> bool:
        chat_id = self._target_chat(params)
        action = str(params.get("action") or "")
        if action not in _CHAT_ACTIONS:
            raise _ApiError(400, "Bad Request: wrong parameter action in request")
        self.chat_actions.append((chat_id, action, _optional_int(params, "message_thread_id")))
        return True

    async def _delete_message(self, params: Json) -> bool:
        chat_id = self._target_chat(params)
        message_id = _required_int(params, "message_id")
        message = self._bot_messages.get((chat_id, message_id))
        if message is not None and not message.deleted:
            message.deleted = True
            return True
        if self._user_messages.pop((chat_id, message_id), None) is not None:
            return True
        raise _ApiError(400, "Bad Request: message to delete not found")

    async def _get_file(self, params: Json) -> Json:
        stored = self._files.get(str(params.get("file_id") or ""))
        if stored is None:
            raise _ApiError(400, "Bad Request: wrong file_id or the file is temporarily unavailable")
        if stored.size > MAX_DOWNLOAD_BYTES:
            raise _ApiError(400, "Bad Request: file is too big")
        return {**self._file_fields(stored.file_id), "file_path": stored.file_path}

    async def _answer_callback_query(self, params: Json) -> bool:
        query_id = str(params.get("callback_query_id") or "")
        if query_id not in self._pending_callbacks:
            raise _ApiError(400, "Bad Request: query is too old and response timeout expired or query ID is invalid")
        self._pending_callbacks.discard(query_id)
        self.callback_answers[query_id] = params
        return True

    async def _get_chat(self, params: Json) -> Json:
        chat = self._chat(self._chat_id(params))
        return {**chat, "accent_color_id": 0, "max_reaction_count": 11, "accepted_gift_types": _NO_GIFTS}

    async def _get_chat_member(self, params: Json) -> Json:
        chat_id = self._chat_id(params)
        user_id = _required_int(params, "user_id")
        if user_id == self.bot_user["id"]:
            return _member_json(self.bot_user, self._members.get((chat_id, user_id), "member"))
        if user_id not in self._users:
            raise _ApiError(400, "Bad Request: user not found")
        status = self._members.get((chat_id, user_id), "member" if chat_id == user_id else "left")
        return _member_json(self._users[user_id], status)

    async def _get_chat_administrators(self, params: Json) -> list[Json]:
        chat_id = self._chat_id(params)
        if chat_id > 0:
            raise _ApiError(400, "Bad Request: there are no administrators in the private chat")
        return [
            _member_json(self._users[user_id], status)
            for (chat, user_id), status in self._members.items()
            if chat == chat_id and status in {"creator", "administrator"}
        ]

    # --- Method helpers ---------------------------------------------------------------------------------------------

    def _chat_id(self, params: Json) -> int:
        chat_id = params.get("chat_id")
        if chat_id is None or chat_id == "":
            raise _ApiError(400, "Bad Request: chat_id is empty")
        if not isinstance(chat_id, int):
            raise _ApiError(400, "Bad Request: chat not found")  # @username lookups are not modelled
        return chat_id

    def _target_chat(self, params: Json) -> int:
        """The chat a message goes to; 403 if the bot was kicked or blocked there."""
        chat_id = self._chat_id(params)
        if chat_id in self._blocked:
            raise _ApiError(403, KICKED if chat_id < 0 else BLOCKED)
        self._chat(chat_id)
        return chat_id

    def _chat(self, chat_id: int) -> Json:
        """The chat with this id; unknown ids become a private chat (positive) or a group (negative)."""
        if chat_id not in self._chats:
            if chat_id > 0:
                self._chats[chat_id] = {"id": chat_id, "first_name": f"User {chat_id}", "type": "private"}
            else:
                self.group(chat_id, f"Group {chat_id}")
        return self._chats[chat_id]

    def _take_message_id(self, chat_id: int) -> int:
        """Message ids count up per chat, shared by users' and the bot's messages."""
        number = self._next_message_id.get(chat_id, 1)
        self._next_message_id[chat_id] = number + 1
        return number

    def _editable(self, params: Json) -> BotMessage:
        if params.get("inline_message_id"):
            raise _ApiError(400, "Bad Request: MESSAGE_ID_INVALID")  # inline messages are not modelled
        chat_id = self._target_chat(params)
        message_id = _required_int(params, "message_id")
        message = self._bot_messages.get((chat_id, message_id))
        if message is None and (chat_id, message_id) in self._user_messages:
            raise _ApiError(400, "Bad Request: message can't be edited")
        if message is None or message.deleted:
            raise _ApiError(400, "Bad Request: message to edit not found")
        return message

    def _reply_target(self, chat_id: int, params: Json) -> int | None:
        reply = params.get("reply_parameters") or {}
        message_id = reply.get("message_id") if isinstance(reply, dict) else None
        if message_id is None:
            message_id = _optional_int(params, "reply_to_message_id")
        if message_id is None:
            return None
        if self._lookup(chat_id, int(message_id)) is None:
            if reply.get("allow_sending_without_reply") or params.get("allow_sending_without_reply"):
                return None
            raise _ApiError(400, "Bad Request: message to be replied not found")
        return int(message_id)

    def _lookup(self, chat_id: int, message_id: int) -> Json | None:
        """Any existing message in a chat, the bot's or a user's, as JSON without its own reply."""
        found: Json | None
        bot_message = self._bot_messages.get((chat_id, message_id))
        if bot_message is not None and not bot_message.deleted:
            found = self._message_json(bot_message)
        else:
            user_message = self._user_messages.get((chat_id, message_id))
            found = copy.deepcopy(user_message) if user_message is not None else None
        if found is not None:
            found.pop("reply_to_message", None)
        return found

    def _message_json(self, message: BotMessage) -> Json:
        chat = self._chat(message.chat_id)
        body: Json = {
            "message_id": message.message_id,
            "from": {key: self.bot_user[key] for key in ("id", "is_bot", "first_name", "username")},
            "chat": dict(chat),
            "date": message.date,
            "text": message.text,
        }
        if message.entities:
            body["entities"] = message.entities
        if message.thread_id is not None:
            body["message_thread_id"] = message.thread_id
            if chat.get("is_forum"):
                body["is_topic_message"] = True
        if message.reply_to is not None:
            body["reply_to_message"] = self._lookup(message.chat_id, message.reply_to)
        if message.edit_date is not None:
            body["edit_date"] = message.edit_date
        if message.reply_markup is not None:
            body["reply_markup"] = message.reply_markup
        return body


@dataclass(frozen=True, slots=True)
class _WithDescription:
    """A success that also carries Telegram's "description" (as setWebhook and deleteWebhook do)."""

    result: Any
    description: str


_NO_GIFTS = {
    "unlimited_gifts": False,
    "limited_gifts": False,
    "unique_gifts": False,
    "premium_subscription": False,
}


async def _read_params(request: web.Request) -> Json:
    """Parameters from the query string and a JSON, form-encoded or multipart body, typed as Telegram reads them."""
    params: Json = _coerce_all(request.query.items())
    if not request.can_read_body:
        return params
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except ValueError as exc:
            raise _ApiError(400, "Bad Request: can't parse JSON body") from exc
        if isinstance(body, dict):
            params.update(body)
        return params
    form: MultiMapping[Any] = await request.post()
    for name, value in form.items():
        if isinstance(value, web.FileField):
            params[name] = {"filename": value.filename, "content_type": value.content_type, "data": value.file.read()}
        else:
            params.update(_coerce_all([(name, value)]))
    return params


def _coerce_all(items: Iterable[tuple[str, Any]]) -> Json:
    params: Json = {}
    for name, value in items:
        if not isinstance(value, str):
            params[name] = value
        elif name in _JSON_FIELDS:
            try:
                params[name] = json.loads(value)
            except ValueError as exc:
                raise _ApiError(400, f"Bad Request: can't parse {name} JSON object") from exc
        elif name in _INT_FIELDS and re.fullmatch(r"-?\d+", value):
            params[name] = int(value)
        elif name in _BOOL_FIELDS:
            params[name] = value.lower() in {"true", "1"}
        else:
            params[name] = value
    return params


def _optional_int(params: Json, name: str) -> int | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _ApiError(400, f"Bad Request: wrong parameter {name} in request")
    return value


def _required_int(params: Json, name: str) -> int:
    value = _optional_int(params, name)
    if value is None:
        raise _ApiError(400, f"Bad Request: {name} is empty")
    return value


def _message_text(params: Json, name: str, *, allow_empty: bool = False) -> tuple[str, list[Json]]:
    """The text as users will see it and its entities, after parse_mode, trimming and the length check."""
    raw = str(params.get(name) or "")
    parse_mode = str(params.get("parse_mode") or "")
    entities = params.get("entities") or []
    if parse_mode.upper() == "HTML":
        try:
            raw, entities = parse_html(raw)
        except HtmlParseError as exc:
            raise _ApiError(400, f"Bad Request: can't parse entities: {exc}") from exc
    text, entities = _strip(raw, entities)
    if not text and not allow_empty:
        raise _ApiError(400, "Bad Request: message text is empty")
    if utf16_len(text) > MAX_TEXT_UTF16:
        raise _ApiError(400, "Bad Request: message is too long")
    return text, entities


def _inline_markup(markup: Any) -> Json | None:
    """Telegram keeps (and echoes) only inline keyboards on a message."""
    return markup if isinstance(markup, dict) and "inline_keyboard" in markup else None


def _scope_key(scope: Any) -> str:
    return json.dumps(scope or {"type": "default"}, sort_keys=True)


def _update_kind(update: Json) -> str | None:
    return next((key for key in update if key != "update_id"), None)


def _member_json(user: Json, status: str) -> Json:
    member: Json = {"status": status, "user": user}
    if status == "creator":
        member["is_anonymous"] = False
    elif status == "administrator":
        member.update(
            can_be_edited=False,
            is_anonymous=False,
            can_manage_chat=True,
            can_delete_messages=True,
            can_manage_video_chats=True,
            can_restrict_members=True,
            can_promote_members=False,
            can_change_info=True,
            can_invite_users=True,
            can_post_stories=False,
            can_edit_stories=False,
            can_delete_stories=False,
        )
    elif status == "kicked":
        member["until_date"] = 0
    return member
