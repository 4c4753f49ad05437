"""The web chat's reply side: every send, edit and answer piece becomes a server-sent event."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from bot.metrics import PlatformObserver
from bot.ports import ReplyLimits, ReplyStream
from bot.types import Answer, MessageRef, SourceLink
from bot.words.messages import sources_heading

log = logging.getLogger(__name__)

# The browser renders Markdown itself and takes any length at any rate.
WEB_LIMITS = ReplyLimits(max_length=1_000_000, min_edit_interval=0.0, first_flush=0.0)


Event = tuple[str, dict[str, Any]]


class EventSink:
    """The events of one request, queued for its SSE response; after the browser left they are dropped."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._ended = False
        self.closed = False

    def emit(self, event: str, data: dict[str, Any]) -> None:
        """Queue one event (a no-op once the browser is gone)."""
        if not self.closed:
            self._queue.put_nowait((event, data))

    def end(self) -> None:
        """No more events: the response may finish."""
        self._queue.put_nowait(None)

    async def take(self) -> tuple[list[Event], bool]:
        """Every event queued by now (waiting for one when there is none), and whether they are the last."""
        if self._ended:
            return [], True
        events: list[Event] = []
        item = await self._queue.get()
        while item is not None:
            events.append(item)
            if self._queue.empty():
                return events, False
            item = self._queue.get_nowait()
        self._ended = True
        return events, True


def encode_events(events: Iterable[Event]) -> bytes:
    """Server-sent events, one after another."""
    return "".join(
        f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n" for event, data in events
    ).encode()


class WebReplyStream:
    """Native streaming: each piece goes to the browser at once as a `delta`; the end as a `final`."""

    def __init__(
        self, sink: EventSink, ref: str, observer: PlatformObserver, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._sink = sink
        self._ref = ref
        self._observer = observer
        self._clock = clock
        self._opened = clock()
        self._text = ""
        self._ended = False

    async def push(self, delta: str) -> None:
        """Send a piece of the answer."""
        if not delta or self._ended:
            return
        if not self._text:
            self._observer.first_visible(self._clock() - self._opened)
        self._text += delta
        self._sink.emit("delta", {"ref": self._ref, "text": delta})
        self._observer.edit_sent()

    async def status(self, text: str) -> None:
        """Show a status line until the answer starts."""
        self._sink.emit("status", {"text": text})

    async def finish(self, answer: Answer) -> MessageRef | None:
        """The whole answer, with its sources and feedback id."""
        return self._final(answer.text, answer, answer.outcome)

    async def fail(self, text: str) -> MessageRef | None:
        """What was written, then the apology."""
        shown = f"{self._text.rstrip()}\n\n{text}" if self._text.strip() else text
        return self._final(shown, None, "failed")

    def _final(self, text: str, answer: Answer | None, outcome: str) -> MessageRef | None:
        if self._ended:
            return MessageRef(self._ref)
        self._ended = True
        if not self._text:
            self._observer.first_visible(self._clock() - self._opened)
        self._sink.emit(
            "final",
            {
                "ref": self._ref,
                "text": text,
                "sources": [source_json(source) for source in (answer.sources if answer else ())],
                "outcome": outcome,
                "message_id": answer.message_id if answer else "",
                # Only an answer may be rated: not a refusal, a notice or a command's reply.
                "rateable": answer.takes_feedback if answer else False,
                "notice": answer.notice if answer else "",
                "sources_heading": sources_heading(answer.language if answer else "en"),
            },
        )
        self._observer.edit_sent()
        return MessageRef(self._ref)


class WebReplyTarget:
    """One request's replies: messages, edits and answer streams as events for the browser."""

    _refs = itertools.count(1)

    def __init__(self, sink: EventSink, observer: PlatformObserver) -> None:
        self._sink = sink
        self._observer = observer

    @property
    def limits(self) -> ReplyLimits:
        """No limits worth throttling for."""
        return WEB_LIMITS

    def render(self, markdown: str) -> str:
        """The browser renders Markdown (safely) itself."""
        return markdown

    async def send(self, text: str, *, markup: bool = True) -> MessageRef:
        """A new bot message."""
        ref = f"m{next(self._refs)}"
        self._sink.emit("message", {"ref": ref, "text": text})
        self._observer.edit_sent()
        return MessageRef(ref)

    async def edit(self, ref: MessageRef, text: str, *, markup: bool = True) -> None:
        """Replace a message's text."""
        self._sink.emit("edit", {"ref": ref.id, "text": text})
        self._observer.edit_sent()

    async def typing(self) -> None:
        """A status line stands for typing."""
        self._sink.emit("status", {"text": ""})

    def open_stream(self) -> ReplyStream:
        """A native stream: pieces as `delta` events."""
        return WebReplyStream(self._sink, f"m{next(self._refs)}", self._observer)


def source_json(source: SourceLink) -> dict[str, Any]:
    """A source as the page reads it, under a streamed answer and in the history alike."""
    return dataclasses.asdict(source)
