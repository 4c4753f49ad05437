"""The channel a person is viewing while they write to the bot: Slack's context for a DM question.

The agent view stamps it on each DM message (`app_context`, entities most relevant first); the legacy assistant
view sends it with assistant_thread_started and assistant_thread_context_changed, kept here per thread.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

_CHANNEL_ENTITY: Final = "slack#/types/channel_id"
_CHANNEL: Final = re.compile(r"[CG][A-Z0-9]{2,}")
# One entry per open assistant thread: plenty, and bounded.
_THREADS_KEPT: Final = 10_000


def is_agent_view(event: Mapping[str, Any]) -> bool:
    """Whether a DM message came through the agent view (which stamps `app_context` on it, `{}` when empty)."""
    return isinstance(event.get("app_context"), Mapping)


def viewed_channel(event: Mapping[str, Any]) -> str:
    """The channel the person was viewing when they wrote (the first channel entity of `app_context`), or ""."""
    context = event.get("app_context")
    entities = context.get("entities") if isinstance(context, Mapping) else None
    for entity in entities if isinstance(entities, list) else ():
        if not isinstance(entity, Mapping) or entity.get("type") != _CHANNEL_ENTITY:
            continue
        value = entity.get("value")
        if isinstance(value, str) and _CHANNEL.fullmatch(value):
            return value
    return ""


def thread_context(event: Mapping[str, Any]) -> tuple[str, str, str]:
    """(DM channel, thread ts, viewed channel or "") of an assistant_thread_started or _context_changed event."""
    thread = event.get("assistant_thread")
    if not isinstance(thread, Mapping):
        return "", "", ""
    context = thread.get("context")
    viewed = context.get("channel_id") if isinstance(context, Mapping) else None
    viewed = viewed if isinstance(viewed, str) and _CHANNEL.fullmatch(viewed) else ""
    return str(thread.get("channel_id") or ""), str(thread.get("thread_ts") or ""), viewed


class ViewedChannels:
    """The legacy assistant threads this process saw open, each with the channel viewed beside it; newest kept."""

    def __init__(self) -> None:
        self._threads: OrderedDict[tuple[str, str], str] = OrderedDict()

    def remember(self, channel: str, thread_ts: str, viewed: str) -> None:
        """An assistant thread, and what the person views beside it now ("" for nothing)."""
        key = (channel, thread_ts)
        self._threads.pop(key, None)
        self._threads[key] = viewed
        while len(self._threads) > _THREADS_KEPT:
            self._threads.popitem(last=False)

    def known(self, channel: str, thread_ts: str) -> bool:
        """Whether this thread was opened as an assistant thread (a conversation of its own)."""
        return (channel, thread_ts) in self._threads

    def of(self, channel: str, thread_ts: str) -> str:
        """The channel viewed beside this thread, or ""."""
        return self._threads.get((channel, thread_ts), "")
