"""A thread the bot is mentioned in late: its earlier messages read once (conversations.replies) as history."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import words as slack_words
from adapters.slack.budget import Pacer
from adapters.slack.calls import call
from adapters.slack.translate import plain_text
from bot.chat.manager import ConversationManager, EarlierMessage
from bot.errors import PlatformError
from bot.types import ConversationKey

log = logging.getLogger(__name__)

# Non-Marketplace distributed apps may read 15 messages a call, once a minute (changelog 2025-05-29).
REPLIES_LIMIT: Final = 15


def _is_own(message: Mapping[str, Any], bot_user_id: str, bot_id: str) -> bool:
    """Whether ragbot itself posted `message`: its bot user, or its bot id (never just any app's bot id)."""
    if bot_user_id and message.get("user") == bot_user_id:
        return True
    return bool(bot_id) and message.get("bot_id") == bot_id


def _rounds(messages: list[Mapping[str, Any]], before_ts: str, bot_user_id: str, bot_id: str) -> list[EarlierMessage]:
    """The thread before `before_ts` as question/answer rounds: people's messages up to each of ragbot's replies
    form its question; people's messages nobody answered form a last round whose answer says so.

    Only ragbot's own messages become its turns. Another app's (an incoming webhook, another bot) is what
    someone in the thread said, on the people's side: replayed as ragbot's answer it would be words put in the
    model's mouth, and an alert people ask about is often the very message that matters.
    """
    rounds: list[EarlierMessage] = []
    asked: list[tuple[str, str, str]] = []  # ts, author, text
    for message in sorted(messages, key=lambda m: float(str(m.get("ts") or 0))):
        ts = str(message.get("ts") or "")
        text = plain_text(str(message.get("text") or ""), bot_user_id)
        if not ts or float(ts) >= float(before_ts) or not text:
            continue
        if _is_own(message, bot_user_id, bot_id):
            if asked:
                rounds += _round(asked, EarlierMessage(ts, "assistant", text, asked[0][0]))
                asked = []
        else:
            asked.append((ts, str(message.get("user") or message.get("bot_id") or ""), text))
    if asked:
        rounds += _round(asked, EarlierMessage("", "assistant", slack_words.THREAD_UNANSWERED, asked[0][0]))
    return rounds


def _round(asked: list[tuple[str, str, str]], answer: EarlierMessage) -> list[EarlierMessage]:
    last_ts, author, _ = asked[-1]
    question = "\n".join(text for _, _, text in asked)
    return [EarlierMessage(last_ts, "user", question, answer.round_id, author), answer]


async def import_thread(
    manager: ConversationManager,
    pacer: Pacer,
    client: AsyncWebClient,
    key: ConversationKey,
    event: Mapping[str, Any],
    bot_user_id: str,
    bot_id: str,
) -> None:
    """Store the thread's messages before `event` as the conversation's history, within Slack's limits.

    Without budget (or when Slack refuses), the question is answered without the thread's history.
    """
    budget = pacer.budget(key.workspace, "conversations.replies")
    if budget.try_take():
        log.info("slack=thread_history_skipped reason=budget channel=%s thread=%s", key.chat, key.thread)
        return
    try:
        response = await call(client.conversations_replies(channel=key.chat, ts=key.thread, limit=REPLIES_LIMIT))
    except PlatformError as exc:
        log.info("slack=thread_history_skipped reason=%s channel=%s", exc, key.chat)
        return
    found = [message for message in response.get("messages") or () if isinstance(message, Mapping)]
    earlier = _rounds(found, str(event.get("ts") or "0"), bot_user_id, bot_id)
    stored = await manager.seed_history(key, earlier)
    log.info("slack=thread_history_imported messages=%d channel=%s", stored, key.chat)
