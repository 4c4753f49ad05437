"""Replying in Telegram: a chat or topic as a ReplyTarget, drafts in private chats, edits in groups."""

from __future__ import annotations

import datetime as dt
import itertools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, LinkPreviewOptions, ReplyParameters
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TelegramError

from adapters.telegram.pacing import Pacer
from adapters.telegram.render import to_telegram_html
from bot.chat.feedback import REASONS
from bot.errors import (
    DeliveryFailed,
    MarkupRejected,
    MessageGone,
    PlatformError,
    PlatformRateLimited,
    PlatformUnavailable,
)
from bot.metrics import PlatformObserver
from bot.ports import ReplyLimits, ReplyStream
from bot.reply.stream import EditingReplyStream, StreamWrapper
from bot.types import Answer, MessageRef
from bot.words import messages

log = logging.getLogger(__name__)

T = TypeVar("T")

# Bot API: 4096 characters per message (counted here in UTF-16 units, the stricter reading).
MAX_LENGTH: Final = 4096
# About one message or edit per second per chat; groups also allow only 20 a minute, so one edit per 3 s.
PRIVATE_LIMITS: Final = ReplyLimits(max_length=MAX_LENGTH, min_edit_interval=1.0, first_flush=0.3)
GROUP_LIMITS: Final = ReplyLimits(max_length=MAX_LENGTH, min_edit_interval=3.0, first_flush=0.3)
FEEDBACK_PREFIX: Final = "fb"
# The second part of a reason button's callback data (`fb:why:outdated:<answer id>`).
WHY: Final = "why"
_NO_PREVIEW: Final = LinkPreviewOptions(is_disabled=True)
_draft_ids = itertools.count(1)


def retry_seconds(error: RetryAfter) -> float:
    """RetryAfter's wait in seconds: PTB gives an int or, with PTB_TIMEDELTA set, a timedelta."""
    value: Any = error.retry_after
    return value.total_seconds() if isinstance(value, dt.timedelta) else float(value)


async def call(request: Awaitable[T]) -> T:
    """Await a Bot API call with its errors as bot.errors platform errors."""
    try:
        return await request
    except RetryAfter as exc:
        raise PlatformRateLimited(retry_seconds(exc), "telegram") from exc
    except BadRequest as exc:
        text = exc.message.lower()
        if "can't parse entities" in text or "unsupported start tag" in text:
            raise MarkupRejected(exc.message) from exc
        if "message to edit not found" in text or "message can't be edited" in text:
            raise MessageGone(exc.message) from exc
        if "chat not found" in text or "not enough rights" in text or "topic_closed" in text:
            raise DeliveryFailed(exc.message) from exc
        raise PlatformError(exc.message) from exc
    except Forbidden as exc:
        raise DeliveryFailed(exc.message) from exc
    except NetworkError as exc:
        # PTB raises NetworkError for a 5xx and for a connection or timeout error (BadRequest, its subclass, is above).
        raise PlatformUnavailable(exc.message) from exc
    except TelegramError as exc:
        raise PlatformError(exc.message) from exc


def feedback_keyboard(message_id: str) -> InlineKeyboardMarkup:
    """👍 / 👎 under an answer; the callback carries the stored answer's id."""
    return InlineKeyboardMarkup(
        [
            [
                InlineKeyboardButton("👍", callback_data=f"{FEEDBACK_PREFIX}:up:{message_id}"),
                InlineKeyboardButton("👎", callback_data=f"{FEEDBACK_PREFIX}:down:{message_id}"),
            ]
        ]
    )


def chosen_keyboard(verdict: str, message_id: str, lang: str) -> InlineKeyboardMarkup:
    """What stays under a rated answer: one button saying the choice ("👍 Thanks for the feedback"), in `lang`.

    Pressing it again records the same choice: nothing changes.
    """
    label = messages.feedback_thanks(verdict, lang)
    chosen = [InlineKeyboardButton(label, callback_data=f"{FEEDBACK_PREFIX}:{verdict}:{message_id}")]
    if verdict != "down":
        return InlineKeyboardMarkup([chosen])
    return InlineKeyboardMarkup([chosen, *_reason_rows(message_id, lang)])


def noted_keyboard(reason: str, message_id: str, lang: str) -> InlineKeyboardMarkup:
    """What stays under a 👎 answer once its reason was picked ("👎 Thanks, noted: Outdated")."""
    label = messages.feedback_noted(reason, lang)
    return InlineKeyboardMarkup([[InlineKeyboardButton(label, callback_data=f"{FEEDBACK_PREFIX}:down:{message_id}")]])


def reason_data(reason: str, message_id: str) -> str:
    """A reason button's callback data: `fb:why:<reason>:<answer id>` (53 bytes at most, under Telegram's 64)."""
    return f"{FEEDBACK_PREFIX}:{WHY}:{reason}:{message_id}"


def _reason_rows(message_id: str, lang: str) -> list[list[InlineKeyboardButton]]:
    """The reasons for a 👎, one tap each, two or three to a row so they fit a phone's width."""
    buttons = [
        InlineKeyboardButton(messages.feedback_reason(reason, lang), callback_data=reason_data(reason, message_id))
        for reason in REASONS
    ]
    return [buttons[:2], buttons[2:]]


@dataclass(slots=True)
class DraftSupport:
    """Whether this bot may stream drafts; turned off for the process once Telegram refuses them."""

    enabled: bool = True


class TelegramTarget:
    """One Telegram chat (or forum topic) as a ReplyTarget; answers reply to the question that asked them."""

    def __init__(
        self,
        bot: Bot,
        chat_id: int,
        *,
        private: bool,
        observer: PlatformObserver,
        drafts: DraftSupport,
        pacer: Pacer,
        thread_id: int | None = None,
        reply_to: int | None = None,
        posted: Callable[[MessageRef], Awaitable[None]] | None = None,
    ) -> None:
        self.bot = bot
        self.chat_id = chat_id
        self.private = private
        self.thread_id = thread_id
        self._reply_to = reply_to
        # Hears each message sent here (a group keyed by reply chain records it: a reply to it continues the chain).
        self._posted = posted
        self._observer = observer
        self._drafts = drafts
        self._pacer = pacer
        # Set while an answer's final text is delivered: its feedback buttons go with it, not in a call of their own.
        self.keyboard: InlineKeyboardMarkup | None = None
        self.keyboard_shown = False

    async def _paced(self, request: Callable[[], Awaitable[T]]) -> T:
        """One message call within the chat's and the bot's limits; a 429 holds back every later call here."""
        await self._pacer.acquire(self.chat_id)
        try:
            result = await call(request())
            self.keyboard_shown = self.keyboard_shown or self.keyboard is not None
            return result
        except PlatformRateLimited as exc:
            self._pacer.rate_limited(self.chat_id, exc.retry_after, bot_wide=False)
            raise
        except PlatformUnavailable:
            self._observer.platform_error()
            raise

    @property
    def limits(self) -> ReplyLimits:
        """One edit a second in private chats, one every 3 s in groups (20 a minute)."""
        return PRIVATE_LIMITS if self.private else GROUP_LIMITS

    def render(self, markdown: str) -> str:
        """Telegram's HTML."""
        return to_telegram_html(markdown)

    async def send(self, text: str, *, markup: bool = True) -> MessageRef:
        """A new message, in the topic, replying to the question (if it still exists)."""
        reply = ReplyParameters(self._reply_to, allow_sending_without_reply=True) if self._reply_to else None
        message = await self._paced(
            lambda: self.bot.send_message(
                self.chat_id,
                text,
                parse_mode=ParseMode.HTML if markup else None,
                message_thread_id=self.thread_id,
                reply_parameters=reply,
                link_preview_options=_NO_PREVIEW,
                reply_markup=self.keyboard,
            )
        )
        ref = MessageRef(str(message.message_id))
        if self._posted is not None:
            await self._posted(ref)
        return ref

    async def edit(self, ref: MessageRef, text: str, *, markup: bool = True) -> None:
        """Replace a message's text; Telegram's "not modified" counts as done."""
        try:
            await self._paced(
                lambda: self.bot.edit_message_text(
                    text,
                    self.chat_id,
                    int(ref.id),
                    parse_mode=ParseMode.HTML if markup else None,
                    link_preview_options=_NO_PREVIEW,
                    reply_markup=self.keyboard,
                )
            )
        except PlatformError as exc:
            if "not modified" not in str(exc).lower():
                raise

    async def typing(self) -> None:
        """ "typing…" for about 5 s."""
        await call(self.bot.send_chat_action(self.chat_id, ChatAction.TYPING, message_thread_id=self.thread_id))

    async def draft(self, draft_id: int, text: str, *, markup: bool = True) -> None:
        """Show `text` as the private chat's draft `draft_id` (a preview; a real message must follow)."""
        try:
            await call(
                self.bot.send_message_draft(
                    self.chat_id,
                    draft_id,
                    text,
                    message_thread_id=self.thread_id,
                    parse_mode=ParseMode.HTML if markup else None,
                )
            )
        except PlatformError as exc:
            if isinstance(exc, PlatformRateLimited | MarkupRejected | PlatformUnavailable):
                # Telegram away for a moment (a 5xx, a timeout): that says nothing of whether it takes drafts.
                raise
            # Drafts are refused (an older Bot API, a chat type without them): edit messages from now on.
            log.warning("telegram=drafts_off reason=%s", exc)
            self._drafts.enabled = False
            raise DeliveryFailed(str(exc)) from exc

    async def add_feedback(self, ref: MessageRef, message_id: str) -> None:
        """Put the feedback buttons under a finished answer."""
        keyboard = feedback_keyboard(message_id)
        await self._paced(lambda: self.bot.edit_message_reply_markup(self.chat_id, int(ref.id), reply_markup=keyboard))

    def open_stream(self) -> ReplyStream:
        """Drafts in private chats (while Telegram takes them), else one message edited in place."""
        if self.private and self._drafts.enabled:
            return DraftReplyStream(self, self._observer)
        return FeedbackStream(EditingReplyStream(self, observer=self._observer), self)


class _DraftTarget:
    """The target as seen by a draft preview: sends and edits become draft updates."""

    def __init__(self, target: TelegramTarget) -> None:
        self._target = target
        self._draft_id = next(_draft_ids)

    @property
    def limits(self) -> ReplyLimits:
        return self._target.limits

    def render(self, markdown: str) -> str:
        return self._target.render(markdown)

    async def send(self, text: str, *, markup: bool = True) -> MessageRef:
        # Past the length limit a preview continues as a new draft.
        self._draft_id = next(_draft_ids)
        await self._target.draft(self._draft_id, text, markup=markup)
        return MessageRef(f"draft-{self._draft_id}")

    async def edit(self, ref: MessageRef, text: str, *, markup: bool = True) -> None:
        await self._target.draft(self._draft_id, text, markup=markup)

    async def typing(self) -> None:
        await self._target.typing()

    def open_stream(self) -> ReplyStream:
        raise NotImplementedError("a draft target only serves DraftReplyStream")


class FeedbackStream(StreamWrapper):
    """A ReplyStream that puts feedback buttons under the finished answer."""

    def __init__(self, inner: ReplyStream, target: TelegramTarget) -> None:
        super().__init__(inner)
        self._target = target

    async def finish(self, answer: Answer) -> MessageRef | None:
        """The whole answer with its feedback buttons on the same call (one call fewer against the limits).

        Refusals and notices carry no buttons: only answers are rated.
        """
        if not answer.takes_feedback:
            return await self._inner.finish(answer)
        self._target.keyboard = feedback_keyboard(answer.message_id)
        try:
            ref = await self._inner.finish(answer)
        finally:
            self._target.keyboard = None
        if ref is not None and not self._target.keyboard_shown:
            # The final text was already on screen, so no call carried the buttons: add them on their own.
            try:
                await self._target.add_feedback(ref, answer.message_id)
            except PlatformError as exc:
                log.warning("telegram=feedback_buttons_failed reason=%s", exc)
        return ref


class DraftReplyStream:
    """Native streaming in a private chat: the answer grows as a draft, then is sent as a real message.

    A draft is only a preview (Telegram drops it after about 30 s), so the finished answer always goes out
    with sendMessage, through rate limits, with its sources and feedback buttons.
    """

    def __init__(self, target: TelegramTarget, observer: PlatformObserver) -> None:
        self._preview = EditingReplyStream(_DraftTarget(target), observer=observer)
        self._final = FeedbackStream(EditingReplyStream(target, observer=observer), target)
        self._written = ""

    async def push(self, delta: str) -> None:
        """Grow the draft."""
        self._written += delta
        await self._preview.push(delta)

    async def status(self, text: str) -> None:
        """Typing until the draft starts."""
        await self._preview.status(text)

    async def finish(self, answer: Answer) -> MessageRef | None:
        """End the draft and send the answer as a message."""
        await self._preview.abandon()
        return await self._final.finish(answer)

    async def fail(self, text: str) -> MessageRef | None:
        """End the draft and send what was written with the apology."""
        await self._preview.abandon()
        await self._final.push(self._written)
        return await self._final.fail(text)
