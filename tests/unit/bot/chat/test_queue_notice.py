"""The queue notice: one message per conversation, shown once a question has waited, edited as the queue moves."""

from __future__ import annotations

import asyncio

import pytest

from bot.chat.queue_notice import QueueNotice
from bot.errors import DeliveryFailed
from bot.types import MessageRef
from bot.words import messages
from tests.support.chat import RecordingTarget, wait_until


def _shown(target: RecordingTarget) -> list[str]:
    """Every text the notice showed, in order: the message sent, then each edit."""
    return target.sent + [text for _, text in target.edits]


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_one_message_says_how_many_wait_is_edited_as_they_start_and_ends_done(lang: str) -> None:
    target, tasks = RecordingTarget(), set[asyncio.Task[None]]()
    notice = QueueNotice(target, lang, 0.0, tasks)
    notice.queued(2)
    await wait_until(lambda: _shown(target) == [messages.queued(2, lang)], target.changed)
    notice.queued(1)
    await wait_until(lambda: _shown(target)[-1] == messages.queued(1, lang), target.changed)
    notice.queued(0)
    await wait_until(lambda: _shown(target)[-1] == messages.queue_done(lang), target.changed)
    await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert _shown(target) == [messages.queued(2, lang), messages.queued(1, lang), messages.queue_done(lang)]
    assert [ref for ref, _ in target.edits] == ["sent-1", "sent-1"]


async def test_a_queue_that_empties_before_the_delay_shows_nothing() -> None:
    target, tasks = RecordingTarget(), set[asyncio.Task[None]]()
    notice = QueueNotice(target, "en", 60.0, tasks)
    notice.queued(1)
    notice.queued(0)
    await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert _shown(target) == []


class _Gone(RecordingTarget):
    async def send(self, text: str, *, markup: bool = True) -> MessageRef:
        raise DeliveryFailed("bot was removed from the chat")


async def test_a_chat_that_cannot_be_written_to_loses_only_the_notice() -> None:
    tasks = set[asyncio.Task[None]]()
    notice = QueueNotice(_Gone(), "en", 0.0, tasks)
    notice.queued(1)
    await asyncio.wait_for(asyncio.gather(*tasks), 10)  # ended, and raised nothing
