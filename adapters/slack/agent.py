"""Slack's agent view: thread titles and suggested prompts, optional calls that never cost an answer.

A workspace whose plan or app setup lacks the agent view refuses these calls; each refusal is logged once per
workspace and method, and the call is not made again there by this process (no retry storm): the workspace keeps
ragbot's plain DM behaviour.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.calls import call
from bot.errors import PlatformError, PlatformRateLimited, PlatformUnavailable

log = logging.getLogger(__name__)

# "Use this method to set up to four suggested prompts in an app thread" (assistant.threads.setSuggestedPrompts).
MAX_PROMPTS: Final = 4
# Slack documents no length for a prompt's title or message, nor for a thread's title. A prompt's title is a chip
# above the composer and a thread's title a line in the agent view's list, so both are kept to what reads at a
# glance; the message is what the composer receives, the whole question as far as a question goes.
PROMPT_TITLE_MAX: Final = 60
PROMPT_MESSAGE_MAX: Final = 300
THREAD_TITLE_MAX: Final = 60
_ELLIPSIS: Final = "…"
# What a workspace answers for a feature it does not have (its plan, the app's setup, a scope the install lacks):
# asking again cannot help until it changes, so the call is not made there again by this process.
_ABSENT: Final = frozenset(
    {
        "not_allowed",
        "unknown_method",
        "not_agent_app",
        "feature_disabled",
        "feature_not_enabled",
        "missing_scope",
        "not_allowed_token_type",
        "method_deprecated",
        "deprecated_endpoint",
        "access_denied",
        "restricted_action",
    }
)


@dataclass(frozen=True, slots=True)
class Prompt:
    """One suggested prompt: the chip's title and the message it puts in the composer."""

    title: str
    message: str


def shorten(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters at a word where one is near, ending in … when cut."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    room = line[: limit - len(_ELLIPSIS)]
    space = room.rfind(" ")
    if space > limit // 2:
        room = room[:space]
    return room.rstrip(" ,;:.-") + _ELLIPSIS


def prompts_of(questions: Sequence[str]) -> list[Prompt]:
    """Up to Slack's four prompts from questions (the most asked first), each within the lengths Slack shows."""
    prompts: list[Prompt] = []
    for question in questions:
        if not question.strip():
            continue
        prompts.append(Prompt(shorten(question, PROMPT_TITLE_MAX), shorten(question, PROMPT_MESSAGE_MAX)))
        if len(prompts) == MAX_PROMPTS:
            break
    return prompts


def thread_title(question: str) -> str:
    """A thread's title from its first question: the question on one line, within THREAD_TITLE_MAX."""
    return shorten(question, THREAD_TITLE_MAX)


class OptionalCalls:
    """Calls a workspace may refuse for want of a feature: once refused so, never made there again; never raising."""

    def __init__(self) -> None:
        self._refused: set[tuple[str, str]] = set()
        self._accepted: set[tuple[str, str]] = set()
        self._first: dict[tuple[str, str], asyncio.Lock] = {}

    def refused(self, workspace: str, method: str) -> bool:
        """Whether `workspace` refused `method` before (then it is not called again by this process)."""
        return (workspace, method) in self._refused

    async def make(self, workspace: str, method: str, request: Callable[[], Awaitable[Any]]) -> bool:
        """Make the call; False when it was not made or failed (logged: one line per refusing workspace).

        Until a workspace has once taken `method`, its calls go one at a time: people opening the DM together in a
        workspace without the feature cost it one refused call, not one each.
        """
        key = (workspace, method)
        if key in self._accepted:
            return await self._make(workspace, method, request)
        async with self._first.setdefault(key, asyncio.Lock()):
            return await self._make(workspace, method, request)

    async def _make(self, workspace: str, method: str, request: Callable[[], Awaitable[Any]]) -> bool:
        if self.refused(workspace, method):
            return False
        try:
            await call(request())
        except (PlatformRateLimited, PlatformUnavailable) as exc:
            log.info("slack=optional_call_skipped method=%s team=%s reason=%s", method, workspace, exc)
            return False
        except PlatformError as exc:
            if str(exc) not in _ABSENT:
                log.warning("slack=optional_call_failed method=%s team=%s reason=%s", method, workspace, exc)
                return False
            self._refused.add((workspace, method))
            log.warning(
                "slack=feature_unavailable method=%s team=%s reason=%s: not called there again until restart",
                method,
                workspace,
                exc,
            )
            return False
        self._accepted.add((workspace, method))
        self._first.pop((workspace, method), None)
        return True


async def set_prompts(
    calls: OptionalCalls,
    client: AsyncWebClient,
    workspace: str,
    channel: str,
    prompts: Sequence[Prompt],
    heading: str,
    *,
    thread_ts: str | None = None,
) -> bool:
    """Show `prompts` in a DM: above the agent view's composer (no thread_ts, which the agent view would take as a
    reason to fail silently) or in a legacy assistant thread."""
    if not prompts:
        return False
    payload = [{"title": prompt.title, "message": prompt.message} for prompt in prompts]
    return await calls.make(
        workspace,
        "assistant.threads.setSuggestedPrompts",
        lambda: client.assistant_threads_setSuggestedPrompts(
            channel_id=channel, thread_ts=thread_ts, prompts=payload, title=heading
        ),
    )


async def set_title(
    calls: OptionalCalls, client: AsyncWebClient, workspace: str, channel: str, thread_ts: str, question: str
) -> bool:
    """Name a DM thread after its first question."""
    title = thread_title(question)
    if not title:
        return False
    return await calls.make(
        workspace,
        "assistant.threads.setTitle",
        lambda: client.assistant_threads_setTitle(channel_id=channel, thread_ts=thread_ts, title=title),
    )
