"""The status message of an ingestion: progress edits within the target's limits, an outcome that always arrives."""

from __future__ import annotations

from bot.errors import MessageGone, PlatformRateLimited
from bot.ports import ReplyLimits, ReplyStream
from bot.reply.status import StatusMessage
from bot.types import MessageRef


class _Chat:
    """A ReplyTarget recording sends and edits at a settable time, failing the calls a test scripts."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []
        self.calls: list[tuple[str, str, str]] = []
        self.failures: list[Exception] = []

    @property
    def limits(self) -> ReplyLimits:
        return ReplyLimits(max_length=4000, min_edit_interval=3.0)

    def render(self, markdown: str) -> str:
        return markdown

    def _maybe_fail(self) -> None:
        if self.failures:
            raise self.failures.pop(0)

    async def send(self, text: str, *, markup: bool = True) -> MessageRef:
        self._maybe_fail()
        self.calls.append(("send", f"m{len(self.calls)}", text))
        return MessageRef(f"m{len(self.calls) - 1}")

    async def edit(self, ref: MessageRef, text: str, *, markup: bool = True) -> None:
        self._maybe_fail()
        self.calls.append(("edit", ref.id, text))

    async def typing(self) -> None:
        pass

    def open_stream(self) -> ReplyStream:
        raise NotImplementedError

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


async def test_progress_is_shown_no_faster_than_the_edit_interval_and_never_twice_the_same() -> None:
    chat = _Chat()
    status = StatusMessage(chat, clock=lambda: chat.now, sleep=chat.sleep)
    await status.update("Queued")
    await status.update("Ingesting 1/10")  # too soon after the first: superseded, not queued
    chat.now = 3.5
    await status.update("Ingesting 5/10")
    await status.update("Ingesting 5/10")
    assert chat.calls == [("send", "m0", "Queued"), ("edit", "m0", "Ingesting 5/10")]


async def test_the_outcome_waits_out_the_interval_and_rate_limits_and_then_arrives() -> None:
    chat = _Chat()
    status = StatusMessage(chat, clock=lambda: chat.now, sleep=chat.sleep)
    await status.update("Queued")
    chat.failures = [PlatformRateLimited(7.0), PlatformRateLimited(2.0)]
    await status.final("Done: 3 chunks")
    assert chat.calls[-1] == ("edit", "m0", "Done: 3 chunks")
    assert chat.slept == [3.0, 7.0, 2.0]


async def test_a_status_message_deleted_meanwhile_is_sent_again() -> None:
    chat = _Chat()
    status = StatusMessage(chat, clock=lambda: chat.now, sleep=chat.sleep)
    await status.update("Queued")
    chat.now = 10
    chat.failures = [MessageGone("message to edit not found")]
    await status.final("Done")
    assert chat.calls[-1] == ("send", "m1", "Done")
