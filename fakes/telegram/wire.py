"""The Bot API's wire: its error texts, ApiError, and parameters read as Telegram types them from any transport."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from multidict import MultiMapping

from fakes.base import Json

NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are exactly the same"
    " as a current content and reply markup of the message"
)
KICKED = "Forbidden: bot was kicked from the group chat"
BLOCKED = "Forbidden: bot was blocked by the user"
NOT_MEMBER = "Forbidden: bot is not a member of the group chat"
TERMINATED_BY_POLL = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
TERMINATED_BY_WEBHOOK = "Conflict: terminated by setWebhook request"
WEBHOOK_ACTIVE = (
    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"
)

# The Bot API's answer to sendMessageDraft outside a private chat (seen in nullclaw/nullclaw#626).
DRAFT_PEER_INVALID = "Bad Request: TEXTDRAFT_PEER_INVALID"
# What a scripted failure says when the test gave no description.
DEFAULT_DESCRIPTIONS = {
    400: "Bad Request: scripted failure",
    401: "Unauthorized",
    403: KICKED,
    404: "Not Found",
    409: TERMINATED_BY_POLL,
    500: "Internal Server Error",
    502: "Bad Gateway",
}

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


class ApiError(Exception):
    """A call Telegram refuses: the HTTP status, the description, and parameters such as retry_after."""

    def __init__(self, status: int, description: str, parameters: Json | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.parameters = parameters


@dataclass(frozen=True, slots=True)
class WithDescription:
    """A success that also carries Telegram's "description" (as setWebhook and deleteWebhook do)."""

    result: Any
    description: str


async def read_params(request: web.Request) -> Json:
    """Parameters from the query string and a JSON, form-encoded or multipart body, typed as Telegram reads them."""
    params: Json = _coerce_all(request.query.items())
    if not request.can_read_body:
        return params
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except ValueError as exc:
            raise ApiError(400, "Bad Request: can't parse JSON body") from exc
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
                raise ApiError(400, f"Bad Request: can't parse {name} JSON object") from exc
        elif name in _INT_FIELDS and re.fullmatch(r"-?\d+", value):
            params[name] = int(value)
        elif name in _BOOL_FIELDS:
            params[name] = value.lower() in {"true", "1"}
        else:
            params[name] = value
    return params


def optional_int(params: Json, name: str) -> int | None:
    """An integer parameter, None when absent or empty; a non-integer is a 400."""
    value = params.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, f"Bad Request: wrong parameter {name} in request")
    return value


def required_int(params: Json, name: str) -> int:
    """An integer parameter that must be there: absent or empty is a 400."""
    value = optional_int(params, name)
    if value is None:
        raise ApiError(400, f"Bad Request: {name} is empty")
    return value
