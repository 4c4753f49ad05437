"""(a) of bench.concurrency: conversations handed to one ConversationManager in this process, streamed by edits.

Each conversation's target records (time, text) of every send and edit and the time of every typing call; answers
stream through the product's EditingReplyStream with a 1 s minimum edit interval (first flush after 0.3 s, the
ReplyLimits default). A logging handler on the root logger counts what the service logs (bench.log_counts).
"""

from __future__ import annotations

import time

from bench.conversations import SOURCE_TITLE, known_answer, question
from bench.figures import Seen
from bench.log_counts import LogTally, TallyHandler, total
from bot.app.manager import build_manager, chat_policy
from bot.app.services import Services
from bot.chat.manager import ConversationManager, TurnResult
from bot.ports import ReplyLimits, ReplyStream
from bot.reply.stream import EditingReplyStream
from bot.types import Answer, ConversationKey, IncomingMessage, MessageRef, SourceLink, UserRef
from bot.words.messages import answer_with_sources

EDIT_INTERVAL = 1.0


class _Observer:
    """One conversation's stream events (bot.reply.stream.StreamObserver)."""

    def __init__(self, seen: Seen) -> None:
        self._seen = seen

    def first_visible(self, seconds: float) -> None:
        pass

    def edit_sent(self) -> None:
        self._seen.edits += 1

    def rate_limited(self) -> None:
        self._seen.rate_limited += 1

    def undelivered(self) -> None:
        self._seen.undelivered += 1


class _TimedStream:
    """The EditingReplyStream, with the time each piece reached it recorded first."""

    def __init__(self, stream: EditingReplyStream, seen: Seen) -> None:
        self._stream = stream
        self._seen = seen
        self._length = 0

    async def push(self, delta: str) -> None:
        self._length += len(delta)
        self._seen.pushed.append((time.monotonic(), self._length))
        await self._stream.push(delta)

    async def status(self, text: str) -> None:
        await self._stream.status(text)

    async def finish(self, answer: Answer) -> MessageRef | None:
        return await self._stream.finish(answer)

    async def fail(self, text: str) -> MessageRef | None:
        return await self._stream.fail(text)

    def __getattr__(self, name: str) -> object:
        # Whatever else the product's stream offers (a later ReplyStream may have more), unrecorded.
        return getattr(self._stream, name)


class EditingTarget:
    """A ReplyTarget recording (time, text) of every send and edit; answers stream through EditingReplyStream."""

    def __init__(self, seen: Seen) -> None:
        self._seen = seen

    @property
    def limits(self) -> ReplyLimits:
        return ReplyLimits(max_length=4000, min_edit_interval=EDIT_INTERVAL)

    def render(self, markdown: str) -> str:
        return markdown

    async def send(self, text: str, *, markup: bool = True) -> MessageRef:
        self._seen.shown.append((time.monotonic(), text))
        self._seen.messages += 1
        return MessageRef(f"{self._seen.number}-{self._seen.messages}")

    async def edit(self, ref: MessageRef, text: str, *, markup: bool = True) -> None:
        self._seen.shown.append((time.monotonic(), text))

    async def typing(self) -> None:
        self._seen.signs.append(time.monotonic())

    def open_stream(self) -> ReplyStream:
        return _TimedStream(EditingReplyStream(self, observer=_Observer(self._seen)), self._seen)


async def _converse(manager: ConversationManager, person: Seen) -> None:
    message = IncomingMessage(
        key=ConversationKey("bench", "", f"chat-{person.number}"),
        message_id=f"m{person.number}",
        user=UserRef(f"u{person.number}"),
        text=question(person.number),
    )
    person.started = time.monotonic()
    result = await manager.handle(message, EditingTarget(person))
    _record_result(person, result)
    person.final = person.shown[-1][1] if person.shown else None
    if person.messages == 0:
        person.error = "no message"


def _record_result(person: Seen, result: TurnResult | None) -> None:
    if result is None:
        # No turn: the manager apologised before one existed (or said nothing).
        person.outcome = "failed"
        person.error = person.error or "no turn"
        return
    person.outcome = result.answer.outcome
    person.sources = [source.title for source in result.answer.sources]
    if result.turn is not None:
        person.stages = {report.name: report.ms for report in result.turn.reports}


class ManagerScenario:
    """(a): conversations handed to one ConversationManager in this process."""

    process = "the bench's child process running the manager (the fake model runs apart)"
    pid = "self"
    edited = True

    def __init__(self, services: Services, log: TallyHandler) -> None:
        self._manager = build_manager(services, chat_policy(services.settings))
        self._log = log

    async def prepare(self, numbers: list[int]) -> None:
        pass

    async def converse(self, person: Seen) -> None:
        await _converse(self._manager, person)

    def log_mark(self) -> int:
        return len(self._log.chat)

    def log_since(self, mark: int) -> LogTally:
        return total(self._log.chat[mark:])

    def expected(self, number: int) -> str:
        # The last edit is the whole answer with its sources, as the person reads it.
        return answer_with_sources(Answer(text=known_answer(number), sources=(SourceLink(1, SOURCE_TITLE),)))
