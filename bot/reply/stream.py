"""EditingReplyStream: an answer shown by sending one message and editing it as the model writes."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, Protocol

from bot.errors import DeliveryFailed, MarkupRejected, MessageGone, PlatformRateLimited
from bot.ports import ReplyStream, ReplyTarget
from bot.reply.split import cut_at, message_body, parts_from, utf16_units
from bot.types import Answer, MessageRef
from bot.words.messages import answer_with_sources

logger = logging.getLogger(__name__)

# Telegram shows a chat action for at most 5 s (sendChatAction), so it is renewed a little before it fades.
TYPING_RENEW: Final = 4.0
# A retry_after of 0 must not turn the final delivery into a busy loop.
_MIN_PENALTY: Final = 0.25
_MAX_BACKOFF: Final = 30.0


class StreamObserver(Protocol):
    """What a stream reports for metrics (bot.chat_metrics.PlatformObserver implements it)."""

    def first_visible(self, seconds: float) -> None:
        """The first text became visible `seconds` after the stream was created."""
        ...

    def edit_sent(self) -> None:
        """A send or an edit of the answer went through."""
        ...

    def rate_limited(self) -> None:
        """The platform answered a call with "too many requests"."""
        ...

    def undelivered(self) -> None:
        """The final text could not be delivered."""
        ...


class _Unobserved:
    def first_visible(self, seconds: float) -> None:
        pass

    def edit_sent(self) -> None:
        pass

    def rate_limited(self) -> None:
        pass

    def undelivered(self) -> None:
        pass


@dataclass(slots=True)
class _Shown:
    """One message of the answer as the platform shows it."""

    ref: MessageRef
    text: str
    markup: bool
    source: str
    # Markdown whose markup this message refused: sent plain from then on, not tried again.
    rejected: str | None = None


@dataclass(frozen=True, slots=True)
class _Step:
    """What the message being written should show; `advance` (offset, carry) when that makes it final."""

    source: str
    advance: tuple[int, str] | None


class EditingReplyStream:
    """The default ReplyStream: one message sent then edited as text comes, continued in new ones past the limit."""

    def __init__(
        self,
        target: ReplyTarget,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        observer: StreamObserver | None = None,
        compose: Callable[[Answer], str] = answer_with_sources,
        final_deadline: float = 120.0,
    ) -> None:
        self._target = target
        self._limits = target.limits
        self._clock = clock
        self._sleep = sleep
        self._observer: StreamObserver = observer or _Unobserved()
        self._compose = compose
        self._final_deadline = final_deadline
        self._created = clock()
        self._text = ""
        self._first_text_at: float | None = None
        self._messages: list[_Shown] = []
        self._index = 0  # the message being written; the ones before it are final
        self._offset = 0  # where its text starts in self._text
        self._carry = ""  # the code fence it reopens
        self._last_call_at: float | None = None
        self._blocked_until = float("-inf")
        self._dirty = False  # text pushed that may not be shown yet
        self._plain = False
        self._dead = False
        self._closing = False
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._flusher: asyncio.Task[None] | None = None
        self._typing: asyncio.Task[None] | None = None
        self._ended: asyncio.Future[MessageRef | None] | None = None

    async def push(self, delta: str) -> None:
        """Add text; the background flusher shows it when the throttle allows, so this never waits on the network."""
        if self._closing or self._dead:
            return
        if not self._text:
            delta = delta.lstrip()
        if not delta:
            return
        self._text += delta
        self._dirty = True
        if self._first_text_at is None:
            self._first_text_at = self._clock()
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush(), name="reply-stream-flush")
        self._wake.set()

    async def status(self, text: str) -> None:
        """Show typing now and renew it until the first text shows or the stream ends."""
        if self._quiet():
            return
        logger.debug("stream status=%r", text)
        await self._type()
        if self._typing is None and not self._quiet():
            self._typing = asyncio.create_task(self._keep_typing(), name="reply-stream-typing")

    async def finish(self, answer: Answer) -> MessageRef | None:
        """Deliver `compose(answer)` whole, through rate limits, until final_deadline; the last message's ref."""
        return await self._end(self._compose(answer))

    async def fail(self, text: str) -> MessageRef | None:
        """Deliver what was written so far with `text` after it, like finish."""
        written = self._text.rstrip()
        return await self._end(f"{written}\n\n{text}" if written else text)

    async def abandon(self) -> None:
        """Stop showing text, with no final delivery: for a preview (a draft) whose answer another stream sends."""
        if self._ended is not None:
            return
        self._ended = asyncio.get_running_loop().create_future()
        self._closing = True
        await _stop(self._typing)
        async with self._lock:
            await _stop(self._flusher)
        self._ended.set_result(None)

    async def _end(self, final_text: str) -> MessageRef | None:
        if self._ended is not None:
            return await asyncio.shield(self._ended)
        ended = self._ended = asyncio.get_running_loop().create_future()
        ref: MessageRef | None = None
        try:
            ref = await self._close(final_text)
        except Exception:
            # This ending broke before it was delivered: a later fail() must still be able to say sorry.
            self._ended = None
            raise
        finally:
            # Later calls get the same result, even when this one was cancelled.
            ended.set_result(ref)
        return ref

    async def _close(self, final_text: str) -> MessageRef | None:
        self._closing = True
        await _stop(self._typing)
        # The flusher holds the lock only around a platform call: once it is ours, no edit is half done.
        async with self._lock:
            await _stop(self._flusher)
            if self._dead:
                self._observer.undelivered()
                return None
            return await self._deliver(final_text)

    async def _deliver(self, text: str) -> MessageRef | None:
        if not text.strip():
            logger.warning("stream final=empty messages=%d", len(self._messages))
            return self._messages[-1].ref if self._messages else None
        parts = self._final_parts(text)
        deadline = self._clock() + self._final_deadline
        for index, part in enumerate(parts):
            if not await self._show_by(index, part, deadline):
                logger.warning("stream final=undelivered part=%d of=%d", index + 1, len(parts))
                self._observer.undelivered()
                return None
        if len(self._messages) > len(parts):
            logger.warning("stream final=shorter parts=%d messages=%d", len(parts), len(self._messages))
        return self._messages[len(parts) - 1].ref

    def _final_parts(self, text: str) -> list[str]:
        # Messages already made final stay as they are when the final text still begins with them.
        if self._index and text.startswith(self._text[: self._offset]):
            kept = [shown.source for shown in self._messages[: self._index]]
            return kept + parts_from(text, self._offset, self._carry, self._fits)
        return parts_from(text, 0, "", self._fits)

    async def _show_by(self, index: int, source: str, deadline: float) -> bool:
        """Show one final part, waiting out rate limits (the throttle does not apply) until `deadline`."""
        backoff = 1.0
        while not self._dead:
            wait = max(self._blocked_until - self._clock(), 0.0)
            if self._clock() + wait > deadline:
                return False
            if wait:
                await self._sleep(wait)
            try:
                await self._show(index, source, markup=True)
                return True
            except PlatformRateLimited as exc:
                self._penalise(exc)
            except DeliveryFailed:
                self._give_up()
            except Exception:
                logger.warning("stream final=retry backoff=%g", backoff, exc_info=True)
                if self._clock() + backoff > deadline:
                    return False
                await self._sleep(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF)
        return False

    async def _flush(self) -> None:
        """Background task: show the newest text whenever the throttle and any rate-limit penalty allow."""
        while not self._dead:
            if not self._dirty:
                self._wake.clear()
                await self._wake.wait()
                continue
            delay = self._due() - self._clock()
            if delay > 0:
                await self._sleep(delay)
                continue
            async with self._lock:
                # Planned only now (rendering costs): whatever was pushed while waiting goes in this one call.
                step = self._next_step()
                if step is None:
                    self._dirty = False
                    continue
                try:
                    await self._show(self._index, step.source, markup=not self._plain)
                except PlatformRateLimited as exc:
                    self._penalise(exc)
                    continue
                except DeliveryFailed:
                    self._give_up()
                    return
                except Exception:
                    # The flusher is its own task; the final delivery tries again, so this edit may be lost.
                    logger.warning("stream edit=failed", exc_info=True)
                    self._last_call_at = self._clock()
                    continue
                if step.advance is not None:
                    self._advance(step.advance)

    def _next_step(self) -> _Step | None:
        """What the message being written should show next; None when it already shows the newest text."""
        while True:
            body, base = message_body(self._text, self._offset, self._carry)
            if not body:
                return None
            current = self._messages[self._index].source if self._index < len(self._messages) else None
            if self._fits(body):
                return None if body == current else _Step(body, None)
            cut = cut_at(body, len(self._carry), self._fits)
            advance = (base + cut.end - len(self._carry), cut.carry)
            if cut.part != current:
                return _Step(cut.part, advance)
            self._advance(advance)

    def _advance(self, advance: tuple[int, str]) -> None:
        self._offset, self._carry = advance
        self._index += 1

    def _due(self) -> float:
        if self._last_call_at is None:
            first = self._created if self._first_text_at is None else self._first_text_at
            due = first + self._limits.first_flush
        else:
            due = self._last_call_at + self._limits.min_edit_interval
        return max(due, self._blocked_until)

    def _fits(self, markdown: str) -> bool:
        # The rendered text is what the platform counts; the source is what goes out if markup is refused.
        limit = self._limits.max_length
        return utf16_units(markdown) <= limit and utf16_units(self._target.render(markdown)) <= limit

    async def _show(self, index: int, source: str, *, markup: bool) -> None:
        """Make message `index` show `source` (sent when it does not exist yet); no call when it already does."""
        shown = self._messages[index] if index < len(self._messages) else None
        markup = markup and (shown is None or shown.rejected != source)
        payload = self._target.render(source) if markup else source
        if shown is not None and (shown.text, shown.markup) == (payload, markup):
            return
        try:
            await self._put(index, payload, source, markup=markup)
        except MarkupRejected:
            if not markup:
                raise
            logger.info("stream markup=rejected message=%d", index)
            # Streamed text is often half-written Markdown; edits stay plain, the final one tries markup again.
            self._plain = True
            if shown is None or (shown.text, shown.markup) != (source, False):
                await self._put(index, source, source, markup=False)
            self._messages[index].rejected = source

    async def _put(self, index: int, payload: str, source: str, *, markup: bool) -> None:
        try:
            if index == len(self._messages):
                ref = await self._target.send(payload, markup=markup)
                # Only an answer that was streamed has a "first text": a notice or another stream's final does not.
                if not self._messages and self._first_text_at is not None:
                    self._observer.first_visible(self._clock() - self._created)
                self._messages.append(_Shown(ref, payload, markup, source))
            else:
                shown = self._messages[index]
                try:
                    await self._target.edit(shown.ref, payload, markup=markup)
                except MessageGone:
                    logger.info("stream message=gone index=%d, sending it again", index)
                    shown.ref = await self._target.send(payload, markup=markup)
                shown.text, shown.markup, shown.source = payload, markup, source
            self._observer.edit_sent()
        finally:
            self._last_call_at = self._clock()

    def _penalise(self, exc: PlatformRateLimited) -> None:
        if not exc.local:
            logger.info("stream rate_limited retry_after=%g", exc.retry_after)
            self._observer.rate_limited()
        self._blocked_until = max(self._blocked_until, self._clock() + max(exc.retry_after, _MIN_PENALTY))

    def _give_up(self) -> None:
        logger.warning("stream delivery=failed, no more attempts for this answer")
        self._dead = True

    def _quiet(self) -> bool:
        """Typing is over: text is showing, or the stream has ended."""
        return bool(self._messages) or self._closing or self._dead

    async def _keep_typing(self) -> None:
        # Bounded, so a stream its caller never ends does not type forever.
        until = self._clock() + self._final_deadline
        while True:
            await self._sleep(TYPING_RENEW)
            if self._quiet() or self._clock() > until:
                return
            await self._type()

    async def _type(self) -> None:
        try:
            await self._target.typing()
        except PlatformRateLimited as exc:
            self._penalise(exc)
        except DeliveryFailed:
            self._give_up()
        except Exception:
            # Typing is decoration: its failure must not end the turn.
            logger.warning("stream typing=failed", exc_info=True)


class StreamWrapper:
    """A ReplyStream around another that adds to how it ends (buttons, trailing blocks); the rest passes through."""

    def __init__(self, inner: ReplyStream) -> None:
        self._inner = inner

    async def push(self, delta: str) -> None:
        """See ReplyStream."""
        await self._inner.push(delta)

    async def status(self, text: str) -> None:
        """See ReplyStream."""
        await self._inner.status(text)

    async def finish(self, answer: Answer) -> MessageRef | None:
        """See ReplyStream."""
        return await self._inner.finish(answer)

    async def fail(self, text: str) -> MessageRef | None:
        """See ReplyStream."""
        return await self._inner.fail(text)


async def _stop(task: asyncio.Task[None] | None) -> None:
    """Cancel a background task and wait until it has ended."""
    if task is None:
        return
    task.cancel()
    await asyncio.wait([task])
    if not task.cancelled() and (exc := task.exception()) is not None:
        logger.error("stream task=%s failed", task.get_name(), exc_info=exc)
