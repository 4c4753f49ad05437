"""Why a 👎 in Telegram: the reason buttons under a 👎 answer, one tap each.

Telegram has no form to type into beside an answer, so the reason is one of the five fixed ones and `other` carries
no text (a ForceReply prompt would make the next message in the chat a note instead of a question, which in a group
catches whoever speaks next). Only the person who pressed 👎 may pick; others are told so in a toast.
"""

from __future__ import annotations

import logging

from telegram import CallbackQuery, InlineKeyboardMarkup, Message
from telegram.error import TelegramError

from adapters.telegram.reply import noted_keyboard
from adapters.telegram.threads import answer_key
from bot.chat.manager import ConversationManager
from bot.words import messages
from bot.words.language import turn_language

log = logging.getLogger(__name__)


async def pick_reason(manager: ConversationManager, query: CallbackQuery, reason: str, answer_id: str) -> None:
    """A reason button pressed: stored and shown in place of the buttons, or the refusal as a toast."""
    message = query.message
    app_language = query.from_user.language_code or ""
    if isinstance(message, Message):
        key = await answer_key(message, answer_id, manager.threads)
        result = await manager.feedback_reason(key, answer_id, reason, by=str(query.from_user.id))
        lang = await manager.language(key, message.text or "", app_language)
    else:
        result, lang = "gone", turn_language("", app_language=app_language)
    if result == "saved":
        await settle_press(query, "", noted_keyboard(reason, answer_id, lang))
    else:
        await settle_press(query, messages.feedback_reason_refused(result, lang), None)


async def settle_press(query: CallbackQuery, refusal: str, keyboard: InlineKeyboardMarkup | None) -> None:
    """Answer a press on a feedback button: with `refusal` as a toast, else by showing `keyboard` under the answer.

    A failure is logged, never raised: the press was recorded (or refused) already."""
    try:
        await query.answer(refusal or None)
        if not refusal and keyboard is not None:
            await query.edit_message_reply_markup(reply_markup=keyboard)
    except TelegramError as exc:
        if "not modified" not in str(exc).lower():  # the same button pressed again
            log.warning("telegram=press_ack_failed reason=%s", exc)
