"""Builders of what Slack sends an app: Events API envelopes and events, slash commands, block actions, signatures."""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

from fakes.base import Json

__all__ = [
    "APP_ID",
    "BOT_USER_ID",
    "app_context",
    "app_home_opened",
    "app_mention",
    "app_uninstalled",
    "assistant_thread_started",
    "block_actions",
    "bot_message",
    "envelope",
    "file_share",
    "form_body",
    "interactive_body",
    "json_body",
    "message",
    "message_changed",
    "message_deleted",
    "new_ts",
    "signed_headers",
    "slash_command",
    "tokens_revoked",
    "url_verification",
    "view_submission",
]


APP_ID = "A0FAKEAPP"
BOT_USER_ID = "U0FAKEBOT"
VERIFICATION_TOKEN = "fake-verification-token"  # the deprecated `token` field every payload still carries
_counter = itertools.count(1)


def new_ts() -> str:
    """A fresh, increasing Slack message ts ("seconds.micro")."""
    return f"{int(time.time())}.{next(_counter):06d}"


def _channel_type(channel: str) -> str:
    return {"D": "im", "G": "group"}.get(channel[:1], "channel")


def _rich_text(text: str) -> list[Json]:
    """The rich_text block Slack attaches to a typed message (one plain text run)."""
    section = {"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}
    return [{"type": "rich_text", "block_id": uuid.uuid4().hex[:5], "elements": [section]}]


# --- Events API -----------------------------------------------------------------------------------------------------


def envelope(
    event: Json,
    *,
    team_id: str,
    api_app_id: str = APP_ID,
    bot_user_id: str = BOT_USER_ID,
    enterprise_id: str | None = None,
    event_id: str | None = None,
    event_time: int | None = None,
    is_ext_shared_channel: bool = False,
) -> Json:
    """An Events API delivery (type event_callback) around one event; event_id stays the same on redelivery."""
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": team_id,
        "enterprise_id": enterprise_id,
        "context_team_id": team_id,
        "context_enterprise_id": enterprise_id,
        "api_app_id": api_app_id,
        "event": event,
        "type": "event_callback",
        "event_id": event_id or f"Ev{uuid.uuid4().hex[:10].upper()}",
        "event_time": event_time or int(time.time()),
        "authorizations": [
            {
                "enterprise_id": enterprise_id,
                "team_id": team_id,
                "user_id": bot_user_id,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": is_ext_shared_channel,
        "event_context": f"4-{uuid.uuid4().hex}",
    }


def app_mention(
    *,
    channel: str,
    user: str,
    text: str,
    team: str,
    ts: str | None = None,
    thread_ts: str | None = None,
    bot_user_id: str = BOT_USER_ID,
) -> Json:
    """An app_mention event; the text starts with the bot's <@mention> unless it already contains one."""
    if f"<@{bot_user_id}>" not in text:
        text = f"<@{bot_user_id}> {text}"
    ts = ts or new_ts()
    event: Json = {
        "type": "app_mention",
        "user": user,
        "text": text,
        "ts": ts,
        "client_msg_id": str(uuid.uuid4()),
        "team": team,
        "blocks": _rich_text(text),
        "channel": channel,
        "event_ts": ts,
    }
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    return event


def message(
    *,
    channel: str,
    user: str,
    text: str,
    team: str,
    ts: str | None = None,
    thread_ts: str | None = None,
    channel_type: str | None = None,
) -> Json:
    """A person's message event: channel_type from the id (D im, G group, C channel); thread_ts for a reply."""
    ts = ts or new_ts()
    event: Json = {
        "type": "message",
        "user": user,
        "text": text,
        "ts": ts,
        "client_msg_id": str(uuid.uuid4()),
        "team": team,
        "blocks": _rich_text(text),
        "channel": channel,
        "event_ts": ts,
        "channel_type": channel_type or _channel_type(channel),
    }
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
        event["parent_user_id"] = user
    return event


def file_share(
    *,
    channel: str,
    user: str,
    files: list[Json],
    team: str,
    text: str = "",
    ts: str | None = None,
    thread_ts: str | None = None,
) -> Json:
    """A message event with subtype file_share and the files[] (as FakeSlackAPI.add_file returns them)."""
    event = message(channel=channel, user=user, text=text, team=team, ts=ts, thread_ts=thread_ts)
    event.update(subtype="file_share", files=files, upload=False, display_as_bot=False)
    if not text:
        event.pop("blocks")
    return event


def message_changed(*, channel: str, user: str, ts: str, text: str, previous_text: str, team: str) -> Json:
    """The hidden message_changed event Slack sends when a person edits a message."""
    now = new_ts()
    edited = {
        "type": "message",
        "user": user,
        "text": text,
        "ts": ts,
        "team": team,
        "edited": {"user": user, "ts": now},
    }
    return {
        "type": "message",
        "subtype": "message_changed",
        "hidden": True,
        "channel": channel,
        "ts": now,
        "event_ts": now,
        "message": edited,
        "previous_message": {"type": "message", "user": user, "text": previous_text, "ts": ts, "team": team},
        "channel_type": _channel_type(channel),
    }


def message_deleted(*, channel: str, user: str, deleted_ts: str, previous_text: str, team: str) -> Json:
    """The hidden message_deleted event Slack sends when a message is deleted."""
    now = new_ts()
    return {
        "type": "message",
        "subtype": "message_deleted",
        "hidden": True,
        "channel": channel,
        "ts": now,
        "deleted_ts": deleted_ts,
        "event_ts": now,
        "previous_message": {"type": "message", "user": user, "text": previous_text, "ts": deleted_ts, "team": team},
        "channel_type": _channel_type(channel),
    }


def bot_message(
    *,
    channel: str,
    bot_id: str,
    text: str,
    user: str | None = None,
    ts: str | None = None,
    thread_ts: str | None = None,
    username: str = "some-bot",
) -> Json:
    """A message from an app: subtype bot_message for a legacy bot, or user + bot_id (no subtype) for an app's bot."""
    ts = ts or new_ts()
    event: Json = {
        "type": "message",
        "text": text,
        "ts": ts,
        "bot_id": bot_id,
        "app_id": APP_ID,
        "channel": channel,
        "event_ts": ts,
        "channel_type": _channel_type(channel),
    }
    if user is None:
        event.update(subtype="bot_message", username=username, icons={})
    else:
        event.update(user=user, bot_profile={"id": bot_id, "app_id": APP_ID, "name": username})
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    return event


def app_context(*channels: str, team: str) -> Json:
    """The `app_context` the agent view stamps on a DM message: what the person is viewing, most relevant first."""
    return {
        "entities": [{"type": "slack#/types/channel_id", "value": channel, "team_id": team} for channel in channels]
    }


def app_home_opened(*, user: str, channel: str, tab: str, view: Json | None = None) -> Json:
    """The app_home_opened event: the person opened the app's Home tab ("home") or its DM ("messages")."""
    event: Json = {"type": "app_home_opened", "user": user, "channel": channel, "tab": tab, "event_ts": new_ts()}
    if view is not None:
        event["view"] = view
    return event


def assistant_thread_started(*, user: str, channel: str, thread_ts: str, team: str, viewing: str = "") -> Json:
    """The legacy assistant view's assistant_thread_started: a thread opened in the side panel, with the channel the
    person was viewing as its context (empty when none)."""
    context: Json = {"team_id": team, "enterprise_id": None}
    if viewing:
        context["channel_id"] = viewing
    return {
        "type": "assistant_thread_started",
        "assistant_thread": {"user_id": user, "context": context, "channel_id": channel, "thread_ts": thread_ts},
        "event_ts": new_ts(),
    }


def url_verification(challenge: str) -> Json:
    """The challenge Slack POSTs when the Request URL is saved; the app echoes `challenge`."""
    return {"token": VERIFICATION_TOKEN, "challenge": challenge, "type": "url_verification"}


def app_uninstalled(*, team_id: str, **envelope_fields: Any) -> Json:
    """The app_uninstalled delivery for a workspace."""
    return envelope({"type": "app_uninstalled"}, team_id=team_id, **envelope_fields)


def tokens_revoked(
    *, team_id: str, bot: list[str] | None = None, oauth: list[str] | None = None, **envelope_fields: Any
) -> Json:
    """The tokens_revoked delivery: user ids (not token strings) of the revoked bot and user tokens."""
    event = {"type": "tokens_revoked", "tokens": {"oauth": oauth or [], "bot": bot or []}}
    return envelope(event, team_id=team_id, **envelope_fields)


# --- Slash commands and interactivity -------------------------------------------------------------------------------


def slash_command(
    *,
    command: str,
    text: str,
    user_id: str,
    channel_id: str,
    team_id: str,
    response_url: str,
    user_name: str = "alice",
    channel_name: str = "general",
    team_domain: str = "fake-team",
    enterprise_id: str | None = None,
    trigger_id: str | None = None,
    api_app_id: str = APP_ID,
) -> dict[str, str]:
    """A slash command's fields, as Slack form-encodes them (send with form_body, or push over Socket Mode)."""
    fields = {
        "token": VERIFICATION_TOKEN,
        "team_id": team_id,
        "team_domain": team_domain,
        "channel_id": channel_id,
        "channel_name": channel_name if channel_id[:1] != "D" else "directmessage",
        "user_id": user_id,
        "user_name": user_name,
        "command": command,
        "text": text,
        "api_app_id": api_app_id,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": trigger_id or f"{next(_counter)}.{uuid.uuid4().hex[:12]}",
    }
    if enterprise_id is not None:
        fields.update(enterprise_id=enterprise_id, enterprise_name=enterprise_id)
    return fields


def block_actions(
    *,
    action_id: str,
    value: str,
    user: str,
    team_id: str,
    channel: str,
    message_ts: str,
    response_url: str,
    message: Json | None = None,
    block_id: str = "actions",
    button_text: str = "Button",
    user_name: str = "alice",
    api_app_id: str = APP_ID,
) -> Json:
    """A block_actions payload for one button click on a message (send with interactive_body, or over Socket Mode)."""
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user_name, "name": user_name, "team_id": team_id},
        "api_app_id": api_app_id,
        "token": VERIFICATION_TOKEN,
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": False},
        "trigger_id": f"{next(_counter)}.{uuid.uuid4().hex[:12]}",
        "team": {"id": team_id, "domain": "fake-team"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel, "name": "general" if channel[:1] != "D" else "directmessage"},
        "message": message or {"type": "message", "ts": message_ts, "text": "", "user": BOT_USER_ID},
        "state": {"values": {}},
        "response_url": response_url,
        "actions": [
            {
                "action_id": action_id,
                "block_id": block_id,
                "text": {"type": "plain_text", "text": button_text, "emoji": True},
                "value": value,
                "type": "button",
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }


def view_submission(
    *,
    view: Json,
    user: str,
    team_id: str,
    values: Json,
    user_name: str = "alice",
    api_app_id: str = APP_ID,
) -> Json:
    """A view_submission payload: the modal `view` (as views.open returned it) sent with its inputs' `values`
    ({block_id: {action_id: {"type": ..., "value" | "selected_option": ...}}})."""
    return {
        "type": "view_submission",
        "team": {"id": team_id, "domain": "fake-team"},
        "user": {"id": user, "username": user_name, "name": user_name, "team_id": team_id},
        "api_app_id": api_app_id,
        "token": VERIFICATION_TOKEN,
        "trigger_id": f"{next(_counter)}.{uuid.uuid4().hex[:12]}",
        "view": {
            **view,
            "team_id": team_id,
            "state": {"values": values},
            "hash": uuid.uuid4().hex[:16],
            "app_id": api_app_id,
        },
        "response_urls": [],
        "is_enterprise_install": False,
        "enterprise": None,
    }


# --- Bodies and signatures ------------------------------------------------------------------------------------------


def json_body(payload: Json) -> bytes:
    """An Events API body: the JSON Slack POSTs."""
    return json.dumps(payload).encode()


def form_body(fields: Mapping[str, str]) -> bytes:
    """A slash command body: form-encoded fields."""
    return urlencode(fields).encode()


def interactive_body(payload: Json) -> bytes:
    """An interactivity body: the payload as JSON in one form field named `payload`."""
    return urlencode({"payload": json.dumps(payload)}).encode()


def signed_headers(
    body: bytes,
    secret: str,
    timestamp: int | None = None,
    *,
    content_type: str = "application/json",
    retry_num: int | None = None,
    retry_reason: str = "http_timeout",
) -> dict[str, str]:
    """Headers Slack sends with a body: v0 signature, timestamp, Content-Type, and retry headers on a redelivery.

    Use content_type "application/x-www-form-urlencoded" for slash commands and interactivity.
    """
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
    assert signature is not None  # None only for a missing timestamp
    headers = {"X-Slack-Signature": signature, "X-Slack-Request-Timestamp": stamp, "Content-Type": content_type}
    if retry_num is not None:
        headers.update({"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": retry_reason})
    return headers
