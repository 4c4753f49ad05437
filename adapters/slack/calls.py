"""Slack Web API calls with their errors as bot.errors platform errors, and what to tell a person about them."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Final, TypeVar

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError

from adapters.slack import words as slack_words
from bot.errors import (
    DeliveryFailed,
    MarkupRejected,
    MessageGone,
    PlatformError,
    PlatformRateLimited,
    PlatformUnavailable,
)

T = TypeVar("T")

_GONE: Final = frozenset({"message_not_found", "cant_update_message", "thread_not_found"})
_UNREACHABLE: Final = frozenset(
    {
        "not_in_channel",
        "channel_not_found",
        "is_archived",
        "invalid_auth",
        "not_authed",
        "token_revoked",
        "token_expired",
        "account_inactive",
        "team_access_not_granted",
        "missing_scope",
        "restricted_action",
        "ekm_access_denied",
        "team_not_found",
    }
)
_BAD_MARKUP: Final = frozenset({"invalid_blocks", "invalid_blocks_format", "msg_blocks_too_long"})


class StreamExpired(PlatformError):
    """Slack ended a native stream (about 5 minutes, or a long pause): finish the message with chat.update."""


def error_code(exc: SlackApiError) -> str:
    """Slack's error string for a failed call ("" when the body had none)."""
    data: Any = exc.response.data if exc.response is not None else None
    return str(data.get("error", "")) if isinstance(data, dict) else ""


def _retry_after(exc: SlackApiError) -> float:
    headers = exc.response.headers if exc.response is not None else {}
    value = headers.get("Retry-After") or headers.get("retry-after") or "1"
    try:
        return max(float(value), 1.0)
    except ValueError:
        return 1.0


async def call(request: Awaitable[T]) -> T:
    """Await a Web API call with its errors as bot.errors platform errors."""
    try:
        return await request
    except SlackApiError as exc:
        code = error_code(exc)
        status = exc.response.status_code if exc.response is not None else 0
        if status == 429 or code == "ratelimited":
            raise PlatformRateLimited(_retry_after(exc), "slack") from exc
        if code == "message_not_in_streaming_state":
            raise StreamExpired(code) from exc
        if code in _GONE:
            raise MessageGone(code) from exc
        if code in _UNREACHABLE:
            raise DeliveryFailed(code) from exc
        if code in _BAD_MARKUP:
            raise MarkupRejected(code) from exc
        if status >= 500:
            raise PlatformUnavailable(f"slack answered {status}: {code or exc}") from exc
        raise PlatformError(code or str(exc)) from exc
    except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
        raise PlatformUnavailable(f"slack unreachable: {exc!r}") from exc


def unreachable_notice(code: str, lang: str) -> str | None:
    """What to tell a person (somewhere else), in `lang`, when the bot cannot write to their channel."""
    if code in ("not_in_channel", "channel_not_found"):
        return slack_words.not_in_channel(lang)
    if code == "is_archived":
        return slack_words.archived(lang)
    return None
