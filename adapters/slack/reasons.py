"""Why a 👎: the "Tell us why" button under a 👎 answer, the modal it opens, and what its submission stores.

Nobody has to answer: the button stays under the answer, and closing the modal stores nothing. The modal carries the
answer's place in its private_metadata; only the person who gave the 👎 may store a reason (checked on submission,
where Slack shows the refusal beside the choice).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, Final

from slack_bolt.context.async_context import AsyncBoltContext

from adapters.slack.calls import call
from adapters.slack.render import Block
from adapters.slack.translate import PLATFORM, Place, conversation_key, workspace_id
from bot.chat.feedback import NOTE_MAX, REASONS
from bot.chat.manager import ConversationManager
from bot.errors import PlatformError
from bot.types import ConversationKey
from bot.words import messages

log = logging.getLogger(__name__)

REASON_ACTION: Final = "ragbot_feedback_reason"
REASON_VIEW: Final = "ragbot_feedback_reason"
_REASON_BLOCK: Final = "reason"
_NOTE_BLOCK: Final = "note"
# A modal's title, submit and close texts hold at most 24 characters (Block Kit reference, views).
_TITLE_CHARS: Final = 24


def ask_why_block(message_id: str, lang: str) -> Block:
    """The button under a 👎 answer that opens the reason modal; its value is the stored answer's id."""
    return {
        "type": "actions",
        "block_id": "ragbot_why",
        "elements": [
            {
                "type": "button",
                "action_id": REASON_ACTION,
                "text": {"type": "plain_text", "text": messages.feedback_ask_why(lang)},
                "value": message_id,
            }
        ],
    }


def reason_modal(place: Mapping[str, str], lang: str) -> dict[str, Any]:
    """The modal asking why: one reason (radio buttons) and an optional note; `place` goes back in the submission."""
    words = messages.feedback_why_form(lang)
    options = [
        {"text": {"type": "plain_text", "text": messages.feedback_reason(reason, lang)}, "value": reason}
        for reason in REASONS
    ]
    return {
        "type": "modal",
        "callback_id": REASON_VIEW,
        "private_metadata": json.dumps(place, separators=(",", ":")),
        "title": _plain(words["title"]),
        "submit": _plain(words["send"]),
        "close": _plain(words["cancel"]),
        "blocks": [
            {
                "type": "input",
                "block_id": _REASON_BLOCK,
                "label": {"type": "plain_text", "text": words["question"]},
                "element": {"type": "radio_buttons", "action_id": "choice", "options": options},
            },
            {
                "type": "input",
                "block_id": _NOTE_BLOCK,
                "optional": True,
                "label": {"type": "plain_text", "text": words["note"]},
                "element": {"type": "plain_text_input", "action_id": "text", "multiline": True, "max_length": NOTE_MAX},
            },
        ],
    }


def submitted(view: Mapping[str, Any]) -> tuple[str, str]:
    """(reason, note) of a submitted reason modal; "" for what is missing."""
    values = (view.get("state") or {}).get("values") or {}
    choice = ((values.get(_REASON_BLOCK) or {}).get("choice") or {}).get("selected_option") or {}
    note = ((values.get(_NOTE_BLOCK) or {}).get("text") or {}).get("value") or ""
    return str(choice.get("value") or ""), str(note)


def _plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": text[:_TITLE_CHARS]}


class ReasonListeners:
    """Bolt's listeners for the "Tell us why" button and the modal's submission."""

    def __init__(self, manager: ConversationManager) -> None:
        self._manager = manager

    async def on_ask_why(
        self,
        ack: Callable[..., Awaitable[None]],
        body: dict[str, Any],
        action: dict[str, Any],
        context: AsyncBoltContext,
    ) -> None:
        """The button: open the modal at once (a trigger_id lives 3 seconds)."""
        await ack()
        message = body.get("message") or {}
        channel, key = await pressed_under(self._manager, body, self._workspace(context))
        # The answer's conversation, as its 👎 was keyed: the submission stores the reason there.
        place = {"m": str(action.get("value") or ""), "c": channel, "t": key.thread}
        lang = await self._manager.language(key, str(message.get("text") or ""))
        client = context.client
        if client is None or not place["m"] or not channel:
            return
        try:
            await call(client.views_open(trigger_id=str(body.get("trigger_id") or ""), view=reason_modal(place, lang)))
        except PlatformError as exc:
            log.warning("slack=reason_modal_not_opened reason=%s", exc)

    async def on_submit(
        self, ack: Callable[..., Awaitable[None]], body: dict[str, Any], view: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        """The modal sent: the reason stored, or the refusal shown in the modal (Slack keeps it open)."""
        try:
            place = {str(k): str(v) for k, v in json.loads(str(view.get("private_metadata") or "{}")).items()}
        except (ValueError, AttributeError):
            place = {}
        reason, note = submitted(view)
        user = str((body.get("user") or {}).get("id") or "")
        key = self._key(place, context)
        lang = await self._manager.language(key, note)
        result = await self._manager.feedback_reason(key, place.get("m", ""), reason, note, by=user)
        if result == "saved":
            await ack()
            await self._confirm(context, place, user, messages.feedback_noted(reason, lang))
            return
        where = _NOTE_BLOCK if result == "too_long" else _REASON_BLOCK
        text = messages.feedback_reason_refused(result, lang, NOTE_MAX)
        await ack(response_action="errors", errors={where: text})

    async def _confirm(self, context: AsyncBoltContext, place: Mapping[str, str], user: str, text: str) -> None:
        """Tell the person, beside the answer and to them alone, that their reason was noted (the modal just closes)."""
        channel = place.get("c", "")
        if context.client is None or not channel or not user:
            return
        # Beside the answer: in its thread (a DM's own answers are in no thread; the note goes in the DM itself).
        thread = place.get("t") or None
        try:
            await call(context.client.chat_postEphemeral(channel=channel, user=user, text=text, thread_ts=thread))
        except PlatformError as exc:
            log.warning("slack=reason_confirmation_failed reason=%s", exc)

    def _key(self, place: Mapping[str, str], context: AsyncBoltContext) -> ConversationKey:
        return ConversationKey(PLATFORM, self._workspace(context), place.get("c", ""), place.get("t", ""))

    @staticmethod
    def _workspace(context: AsyncBoltContext) -> str:
        return workspace_id(context.team_id, context.enterprise_id)


async def answer_key(manager: ConversationManager, where: Place, *, in_thread: bool) -> ConversationKey:
    """The conversation of an answer under a button: its channel thread; in a DM the DM's, unless the answer is in a
    DM thread kept apart (the agent view's)."""
    if where.private and in_thread:
        apart = conversation_key(replace(where, apart=True))
        if await manager.known(apart):
            return apart
    return conversation_key(where)


async def pressed_under(
    manager: ConversationManager, body: Mapping[str, Any], workspace: str
) -> tuple[str, ConversationKey]:
    """The channel and the conversation of the answer a button was pressed under (a block_actions body)."""
    container = body.get("container") or {}
    message = body.get("message") or {}
    channel = str((body.get("channel") or {}).get("id") or container.get("channel_id") or "")
    thread = str(message.get("thread_ts") or container.get("thread_ts") or message.get("ts") or "")
    where = Place(workspace, channel, thread, channel.startswith("D"))
    return channel, await answer_key(manager, where, in_thread=bool(message.get("thread_ts")))
