"""Slack's native streaming: chat.startStream, appendStream deltas, stopStream with the sources and buttons.

Slack ends a stream by itself after about five minutes or a long pause (`message_not_in_streaming_state`);
the message is then completed with chat.update, as Slack's docs require. Past 12,000 characters an answer
continues in a new message of the thread.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.calls import StreamExpired
from adapters.slack.render import (
    MAX_MARKDOWN,
    Block,
    body,
    fallback_text,
    markdown_block,
    neutralise,
    settled,
    trailing_blocks,
)
from bot.errors import DeliveryFailed, PlatformError, PlatformRateLimited
from bot.metrics import PlatformObserver
from bot.types import Answer, MessageRef

log = logging.getLogger(__name__)

# appendStream is Tier 4 per workspace: each answer appends at most once a second, the budget shares the rest.
T = TypeVar("T")


class StreamingTarget(Protocol):
    """The thread a native stream writes into (met by adapters.slack.reply.SlackTarget)."""

    client: AsyncWebClient
    channel: str
    thread_ts: str
    recipient_user: str
    recipient_team: str
    observer: PlatformObserver

    async def api(self, method: str, request: Callable[[], Awaitable[T]], *, final: bool) -> T:
        """One Web API call within the workspace's budget for `method`."""
        ...

    async def typing(self) -> None:
        """Show that an answer is on its way."""
        ...


APPEND_INTERVAL: Final = 1.0
FIRST_FLUSH: Final = 0.3
FINAL_DEADLINE: Final = 120.0
_MIN_PENALTY: Final = 0.25


@dataclass(slots=True)
class _Message:
    """One message of the answer: its ts, the Markdown it shows, whether it still streams or may grow."""

    ts: str
    text: str
    streaming: bool
    open: bool = True


def split(text: str, room: int) -> tuple[str, str]:
    """`text` cut to fit `room` characters at a paragraph, line or word boundary: (what fits, the rest)."""
    if len(text) <= room:
        return text, ""
    if room <= 0:
        return "", text
    window = text[:room]
    for separator in ("\n\n", "\n", " "):
        at = window.rfind(separator)
        if at > room // 2:
            return text[: at + len(separator)], text[at + len(separator) :]
    return window, text[room:]


class NativeReplyStream:
    """A ReplyStream over chat.startStream / appendStream / stopStream, within the workspace's budgets."""

    def __init__(
        self,
        target: StreamingTarget,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        final_deadline: float = FINAL_DEADLINE,
    ) -> None:
        self._target = target
        self._clock = clock
        self._sleep = sleep
        self._final_deadline = final_deadline
        self._created = clock()
        self._text = ""  # what was pushed, defused (see render.neutralise) as far as it can be decided
        self._held = ""  # what was pushed after that: an opening "<" whose next characters decide what it is
        self._sent = 0  # how much of self._text the messages show
        self._messages: list[_Message] = []
        self._first_text_at: float | None = None
        self._last_call_at: float | None = None
        self._blocked_until = float("-inf")
        self._dead = False
        self._closing = False
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._flusher: asyncio.Task[None] | None = None
        self._ended: asyncio.Future[MessageRef | None] | None = None
        self._final_rest = ""

    async def push(self, delta: str) -> None:
        """Add text; the background flusher streams it when the budget allows (never waits on the network)."""
        if self._closing or self._dead:
            return
        if not self._text and not self._held:
            delta = delta.lstrip()
        if not delta:
            return
        held = self._held + delta
        cut = settled(held)
        self._text += neutralise(held[:cut])
        self._held = held[cut:]
        if self._first_text_at is None:
            self._first_text_at = self._clock()
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush(), name="slack-stream-flush")
        self._wake.set()

    async def status(self, text: str) -> None:
        """The thread's status line until the first text streams."""
        if not self._messages and not self._closing:
            await self._target.typing()

    async def finish(self, answer: Answer) -> MessageRef | None:
        """The answer's text, then its sources and feedback buttons as the stream's trailing blocks."""
        return await self._end(body(answer), trailing_blocks(answer))

    async def fail(self, text: str) -> MessageRef | None:
        """What was written so far with `text` after it."""
        written = (self._text + self._held).rstrip()
        return await self._end(f"{written}\n\n{text}" if written else text, [])

    async def _end(self, final: str, blocks: list[Block]) -> MessageRef | None:
        if self._ended is not None:
            return await asyncio.shield(self._ended)
        final = neutralise(final)
        ended = self._ended = asyncio.get_running_loop().create_future()
        ref: MessageRef | None = None
        try:
            self._closing = True
            async with self._lock:
                if self._flusher is not None:
                    self._flusher.cancel()
                    await asyncio.wait([self._flusher])
                ref = await self._deliver(final, blocks)
        except Exception:
            # This ending broke before it was delivered: a later fail() must still be able to say sorry.
            self._ended = None
            raise
        finally:
            ended.set_result(ref)
        return ref

    # Streaming while the model writes.

    async def _flush(self) -> None:
        while not self._dead:
            if self._sent >= len(self._text):
                self._wake.clear()
                await self._wake.wait()
                continue
            delay = self._due() - self._clock()
            if delay > 0:
                await self._sleep(delay)
                continue
            async with self._lock:
                try:
                    await self._stream_pending()
                except PlatformRateLimited as exc:
                    self._penalise(exc)
                except StreamExpired:
                    log.info("slack stream=expired ts=%s, editing it from now on", self._messages[-1].ts)
                    self._messages[-1].streaming = False
                except DeliveryFailed:
                    log.warning("slack stream delivery=failed, no more attempts for this answer")
                    self._dead = True
                except PlatformError as exc:
                    log.warning("slack stream call=failed reason=%s", exc)
                finally:
                    self._last_call_at = self._clock()

    def _due(self) -> float:
        if self._last_call_at is None:
            assert self._first_text_at is not None
            due = self._first_text_at + FIRST_FLUSH
        else:
            due = self._last_call_at + APPEND_INTERVAL
        return max(due, self._blocked_until)

    def _penalise(self, exc: PlatformRateLimited) -> None:
        if not exc.local:
            self._target.observer.rate_limited()
        self._blocked_until = max(self._blocked_until, self._clock() + max(exc.retry_after, _MIN_PENALTY))

    async def _stream_pending(self) -> None:
        """Show what was pushed since the last call: one start, append or update (progress, budgeted)."""
        current = self._messages[-1] if self._messages and self._messages[-1].open else None
        room = MAX_MARKDOWN - (len(current.text) if current else 0)
        piece, rest = split(self._text[self._sent :], room)
        if current is None:
            await self._start(piece, final=False)
        elif not piece:
            await self._close_message(current, "", [], final=False)
            return
        elif current.streaming:
            await self._append(current, piece, final=False)
        else:
            await self._update(current, current.text + piece, [], final=False)
        self._sent += len(piece)
        if rest and self._messages[-1].open:
            await self._close_message(self._messages[-1], "", [], final=False)

    async def _start(self, text: str, *, final: bool) -> None:
        target = self._target
        response = await target.api(
            "chat.startStream",
            lambda: target.client.chat_startStream(
                channel=target.channel,
                thread_ts=target.thread_ts,
                recipient_user_id=target.recipient_user or None,
                recipient_team_id=target.recipient_team or None,
                markdown_text=neutralise(text),
            ),
            final=final,
        )
        self._messages.append(_Message(str(response["ts"]), text, streaming=True))
        if not final and len(self._messages) == 1:
            target.observer.first_visible(self._clock() - self._created)
        target.observer.edit_sent()

    async def _append(self, message: _Message, text: str, *, final: bool) -> None:
        target = self._target
        await target.api(
            "chat.appendStream",
            lambda: target.client.chat_appendStream(
                channel=target.channel, ts=message.ts, markdown_text=neutralise(text)
            ),
            final=final,
        )
        message.text += text
        target.observer.edit_sent()

    async def _update(self, message: _Message, text: str, blocks: list[Block], *, final: bool) -> None:
        target = self._target
        await target.api(
            "chat.update",
            lambda: target.client.chat_update(
                channel=target.channel,
                ts=message.ts,
                blocks=[markdown_block(text), *blocks],
                text=fallback_text(text),
            ),
            final=final,
        )
        message.text = text
        target.observer.edit_sent()

    async def _close_message(self, message: _Message, text: str, blocks: list[Block], *, final: bool) -> None:
        """End a message: stopStream (with the last text and blocks) while it streams, else chat.update."""
        target = self._target
        if message.streaming:
            try:
                await target.api(
                    "chat.stopStream",
                    lambda: target.client.chat_stopStream(
                        channel=target.channel,
                        ts=message.ts,
                        markdown_text=neutralise(text) or None,
                        blocks=blocks or None,
                    ),
                    final=final,
                )
                message.text += text
                message.streaming = message.open = False
                target.observer.edit_sent()
                return
            except StreamExpired:
                message.streaming = False
        if text or blocks:
            await self._update(message, message.text + text, blocks, final=final)
        message.open = False

    # The final delivery: never throttled, waits out rate limits until the deadline.

    async def _deliver(self, final: str, blocks: list[Block]) -> MessageRef | None:
        deadline = self._clock() + self._final_deadline
        if self._dead:
            self._target.observer.undelivered()
            return None
        final = final.strip() or self._text.strip()
        if not final:
            log.warning("slack stream final=empty messages=%d", len(self._messages))
            return MessageRef(self._messages[-1].ts) if self._messages else None
        shown = "".join(message.text for message in self._messages)
        try:
            if final.startswith(shown):
                self._final_rest = final[len(shown) :]
                await self._retrying(lambda: self._complete(blocks), deadline)
            else:
                await self._retrying(lambda: self._rewrite(final, blocks), deadline)
        except (DeliveryFailed, TimeoutError) as exc:
            log.warning("slack stream final=undelivered reason=%r", exc)
            self._target.observer.undelivered()
            return None
        return MessageRef(self._messages[-1].ts) if self._messages else None

    async def _retrying(self, step: Callable[[], Awaitable[bool]], deadline: float) -> None:
        """Run `step` until it reports done, waiting out 429s and stream expiry; TimeoutError past `deadline`."""
        backoff = 1.0
        while True:
            try:
                if await step():
                    return
                continue
            except PlatformRateLimited as exc:
                wait = max(exc.retry_after, _MIN_PENALTY)
                if not exc.local:
                    self._target.observer.rate_limited()
            except StreamExpired:
                self._messages[-1].streaming = False
                continue
            except DeliveryFailed:
                raise
            except PlatformError as exc:
                log.warning("slack stream final=retry reason=%s backoff=%g", exc, backoff)
                wait, backoff = backoff, min(backoff * 2, 30.0)
            if self._clock() + wait > deadline:
                raise TimeoutError("final delivery deadline")
            await self._sleep(wait)

    async def _complete(self, blocks: list[Block]) -> bool:
        """One step towards showing the rest of the final text; True once the last message is closed."""
        current = self._messages[-1] if self._messages and self._messages[-1].open else None
        room = MAX_MARKDOWN - (len(current.text) if current else 0)
        piece, rest = split(self._final_rest, room)
        if current is not None:
            await self._close_message(current, piece, [] if rest else blocks, final=True)
        elif piece:
            await self._post(piece, [] if rest else blocks)
        self._final_rest = rest
        return not rest

    async def _post(self, text: str, blocks: list[Block]) -> None:
        target = self._target
        response = await target.api(
            "chat.postMessage",
            lambda: target.client.chat_postMessage(
                channel=target.channel,
                thread_ts=target.thread_ts or None,
                blocks=[markdown_block(text), *blocks],
                text=fallback_text(text),
            ),
            final=True,
        )
        self._messages.append(_Message(str(response["ts"]), text, streaming=False, open=False))
        target.observer.edit_sent()

    async def _rewrite(self, final: str, blocks: list[Block]) -> bool:
        """The final text differs from what streamed (a filtered or replaced answer): rewrite the messages."""
        for message in self._messages:
            if message.streaming:
                await self._close_message(message, "", [], final=True)
        parts: list[str] = []
        rest = final
        while rest:
            part, rest = split(rest, MAX_MARKDOWN)
            parts.append(part)
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            if index < len(self._messages):
                if self._messages[index].text != part or last:
                    await self._update(self._messages[index], part, blocks if last else [], final=True)
            else:
                await self._post(part, blocks if last else [])
        if len(self._messages) > len(parts):
            log.warning("slack stream final=shorter parts=%d messages=%d", len(parts), len(self._messages))
        return True
