"""Slack's Web API wire: SlackError, one call's context, and its params read from a query, JSON or form body."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from fakes.base import Json
from fakes.slack.records import Workspace


@dataclass(frozen=True, slots=True)
class Ctx:
    """One Web API call as a method handler sees it: its params, its workspace (None for app tokens), its auth."""

    params: Json
    workspace: Workspace | None
    authorization: str

    @property
    def bot(self) -> Workspace:
        """The workspace of a call with a bot token."""
        assert self.workspace is not None  # bot methods are authenticated before they run
        return self.workspace


class SlackError(Exception):
    """A call Slack refuses: its `error` string, the HTTP status (200 for most), and Retry-After for a 429."""

    def __init__(self, error: str, status: int = 200, retry_after: int | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.status = status
        self.retry_after = retry_after


# A Web API method: one call's context in, the answer's fields (besides ok) out.
MethodHandler = Callable[[Ctx], Awaitable[Json]]


async def read_params(request: web.Request) -> tuple[Json, str | None, str]:
    """The call's params (query string, then a JSON or form body over it), a token param, and the transport."""
    params: Json = dict(request.query.items())
    token = params.pop("token", None)
    transport = "query"
    if request.body_exists:
        if request.content_type == "application/json":
            try:
                body = await request.json()
            except ValueError as exc:
                raise SlackError("invalid_json") from exc
            if not isinstance(body, dict):
                raise SlackError("invalid_json")
            body.pop("token", None)  # Slack takes a token from the header or a form field, never from JSON
            params.update(body)
            transport = "json"
        elif request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
            form = {name: value for name, value in (await request.post()).items() if isinstance(value, str)}
            token = form.pop("token", token)
            params.update(form)
            transport = "form" if request.content_type.endswith("urlencoded") else "multipart"
        else:
            raise SlackError("invalid_post_type")
    return params, token, transport


def opt(params: Json, name: str) -> str | None:
    """A parameter as a string, or None when absent."""
    value = params.get(name)
    return None if value is None else str(value)


def json_list(value: Any, error: str) -> list[Json] | None:
    """A list of objects, given as JSON (a JSON body) or as a JSON string (a form field)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise SlackError(error) from exc
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise SlackError(error)
    return value
