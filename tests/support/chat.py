"""A recording ReplyTarget and a scripted answerer: hand fakes of our own protocols for the chat tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from bot.ports import ReplyLimits, ReplyStream
from bot.types import Answer, MessageRef
from rag.pipeline import Pipeline, TurnContext
from rag.stages.stream_answer import StreamAnswer
from rag.types import Candidate
from storage.records import MessageRecord


@dataclass
class RecordedStream:
    """What one answer stream was given."""

    pushed: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    finished: Answer | None = None
    failed: str | None = None
    first_piece: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def text(self) -> str:
        return "".join(self.pushed)


class RecordingStream:
    """A ReplyStream that records; its final answer or failure is what the person would end up seeing."""

    def __init__(self, record: RecordedStream, ref: MessageRef) -> None:
        self.record = record
        self._ref = ref

    async def push(self, delta: str) -> None:
        self.record.pushed.append(delta)
        self.record.first_piece.set()

    async def status(self, text: str) -> None:
        self.record.statuses.append(text)

    async def finish(self, answer: Answer) -> MessageRef | None:
        self.record.finished = answer
        return self._ref

    async def fail(self, text: str) -> MessageRef | None:
        self.record.failed = text
        return self._ref


class RecordingTarget:
    """A ReplyTarget that records sends, edits and streams, in order."""

    def __init__(self, limits: ReplyLimits | None = None) -> None:
        self._limits = limits or ReplyLimits(max_length=4000, min_edit_interval=0.0, first_flush=0.0)
        self.sent: list[str] = []
        self.edits: list[tuple[str, str]] = []
        self.streams: list[RecordedStream] = []
        self.changed = asyncio.Event()
        self.typed = asyncio.Event()

    @property
    def limits(self) -> ReplyLimits:
        return self._limits

    def render(self, markdown: str) -> str:
        return markdown

    async def send(self, text: str, *, markup: bool = True) -> MessageRef:
        self.sent.append(text)
        self.changed.set()
        return MessageRef(f"sent-{len(self.sent)}")

    async def edit(self, ref: MessageRef, text: str, *, markup: bool = True) -> None:
        self.edits.append((ref.id, text))
        self.changed.set()

    async def typing(self) -> None:
        self.typed.set()

    def open_stream(self) -> ReplyStream:
        record = RecordedStream()
        self.streams.append(record)
        self.changed.set()
        return RecordingStream(record, MessageRef(f"stream-{len(self.streams)}"))

    def replies(self) -> list[str]:
        """The final text of every stream and message, in order: what the person read."""
        texts = [s.finished.text if s.finished else (s.failed or "") for s in self.streams]
        return texts + self.sent


VPN = Candidate(
    id="chunk-vpn",
    kind="chunk",
    kb_id="kb",
    text="The VPN client is installed from the Software Center.",
    score=0.031,
    document_id="doc-vpn",
    position=2,
    metadata={"title": "vpn.md"},
)


class _Scripted:
    name = "CHAT_COMPLETION_STREAM"

    def __init__(self, answerer: ScriptedAnswerer) -> None:
        self._answerer = answerer

    async def run(self, turn: TurnContext) -> str:
        if self._answerer.fail_in_pipeline:
            raise ConnectionError("index unreachable")
        turn.selected = [VPN]
        turn.outcome = "generated"
        turn.answer = self._answerer.stream()
        return ""


class ScriptedAnswerer:
    """Answers every question with scripted pieces through the real STREAM_ANSWER stage.

    A piece "!" raises mid-stream; a piece "|" holds the first stream that reaches it until `release` is set.
    """

    def __init__(self, pieces: Sequence[str] = ("The VPN ", "client."), *, fail_in_pipeline: bool = False) -> None:
        self.pieces = list(pieces)
        self.fail_in_pipeline = fail_in_pipeline
        self.asked: list[tuple[str, tuple[str, ...]]] = []
        self.fallback_texts: list[str] = []
        self.languages: list[str | None] = []
        # The conversations `/new` told the answerer to forget (their web passages).
        self.forgotten: list[str] = []
        # Whether each turn was let search the web (the chat's `/web on`).
        self.web_searches: list[bool] = []
        # The stored messages each turn was handed as its history (read before its question was stored).
        self.histories: list[tuple[MessageRecord, ...] | None] = []
        self.release = asyncio.Event()
        self.holding = asyncio.Event()
        # The answers' deadline, as Answerer.prepare sets it from ANSWER_DEADLINE (None: none).
        self.deadline: float | None = None
        self.rag_stream = Pipeline("rag_stream", [_Scripted(self), StreamAnswer()])
        self.chat_stream = Pipeline("chat_stream", [_Scripted(self), StreamAnswer()])

    def prepare(
        self,
        question: str,
        kb_ids: Sequence[str],
        *,
        conversation_id: str = "",
        document_ids: Sequence[str] = (),
        history: Sequence[tuple[str, str]] = (),
        on_text: Callable[[str], Awaitable[None]] | None = None,
        stop: asyncio.Event | None = None,
        fallback_text: str = "",
        language: str | None = None,
        stored_history: Sequence[MessageRecord] | None = None,
        web_search: bool = False,
        web_scope: str = "",
    ) -> TurnContext:
        self.asked.append((question, tuple(kb_ids)))
        self.histories.append(None if stored_history is None else tuple(stored_history))
        self.fallback_texts.append(fallback_text)
        self.languages.append(language)
        self.web_searches.append(web_search)
        return TurnContext(
            query=question,
            kb_ids=tuple(kb_ids),
            conversation_id=conversation_id,
            on_text=on_text,
            stop=stop,
            deadline=self.deadline,
        )

    async def execute(self, turn: TurnContext, pipeline: Pipeline | None = None) -> TurnContext:
        return await (pipeline or self.rag_stream).run(turn)

    def forget(self, conversation_id: str) -> None:
        self.forgotten.append(conversation_id)

    async def stream(self) -> AsyncIterator[str]:
        for piece in self.pieces:
            if piece == "!":
                raise ConnectionResetError("model connection dropped")
            if piece == "|":
                if not self.holding.is_set():
                    self.holding.set()
                    await asyncio.wait_for(self.release.wait(), 10)
                continue
            yield piece


async def wait_until(condition: Callable[[], bool], event: asyncio.Event) -> None:
    """Wait, on `event`, until `condition` holds (fails the test after 10 s)."""

    async def loop() -> None:
        while not condition():
            event.clear()
            await event.wait()

    await asyncio.wait_for(loop(), 10)
