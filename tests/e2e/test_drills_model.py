"""Failure drills of the chat model: what a person in Telegram sees when the model breaks, and that no accepted
question is left without a final answer.

The real openai client talks to FakeOpenAI, which answers 500s, holds requests without a byte, trickles tokens
slower than the answer's deadline, and breaks its event stream in the ways streams break (garbage, an error event, a
clean end without [DONE], a dropped connection). Over the real services and the real python-telegram-bot.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from bot.words import messages
from fakes.openai_api import FakeOpenAI, StreamFaultKind
from fakes.telegram import FakeTelegramBotAPI
from tests.conftest import EmbeddedSettings
from tests.support.drills import (
    TelegramWorld,
    model_env,
    stored_turns,
    telegram_env,
    telegram_reply,
    telegram_world,
    undelivered_total,
    unfinished,
)

# A model answer of 24 words, so a cut one is told from a whole one.
REPLY = "The VPN client is installed from the Software Center [1]. " + " ".join(f"w{n}" for n in range(14))
QUESTION = "How do I install the VPN client?"
EXTRACTIVE = "The VPN client is installed from the Software Center."
# Seconds: the model's per-read timeout (no byte for this long fails a request) and the answer's whole deadline.
MODEL_TIMEOUT = 2.0
DEADLINE = 4.0


class Drill:
    """The world of these drills: ragbot in Telegram over the handbook, with FakeOpenAI as its chat model."""

    def __init__(self, world: TelegramWorld, model: FakeOpenAI) -> None:
        self.world = world
        self.model = model

    async def ask(self) -> str:
        """Ask the question from a new person; what their chat shows once the answer is final."""
        return await telegram_reply(self.world.fake, self.world.ask(QUESTION))

    async def assert_nothing_lost(self) -> None:
        """The drill's figure: every accepted question has a final answer, and every final answer was shown."""
        assert await unfinished(self.world.services.db) == []
        assert undelivered_total(self.world.metrics) == 0

    async def last_outcome(self) -> tuple[str, str]:
        """The status and outcome stored for the latest question, once stored."""
        await unfinished(self.world.services.db)
        last = (await stored_turns(self.world.services.db))[-1]
        return last.status, last.outcome


@pytest_asyncio.fixture(scope="module")
async def drill(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[Drill]:
    async with FakeOpenAI() as model, FakeTelegramBotAPI() as fake:
        settings = embedded_settings(
            tmp_path_factory.mktemp("drills-model"),
            ANSWER_DEADLINE=DEADLINE,
            **model_env(model, retries=1, CHAT_MODEL_TIMEOUT=MODEL_TIMEOUT),
            **telegram_env(fake),
        )
        async with telegram_world(fake, settings) as world:
            yield Drill(world, model)


@pytest.fixture(autouse=True)
def _model_reply(drill: Drill) -> None:
    drill.model.reply = REPLY
    drill.model.tokens_per_second = 0.0


def _chat_requests(model: FakeOpenAI) -> int:
    return sum(request.path.endswith("/chat/completions") for request in model.requests)


async def test_a_model_answering_500_gets_the_person_the_answer_from_the_sources(drill: Drill) -> None:
    before = _chat_requests(drill.model)
    drill.model.fail_next(500, times=2)  # the request and the client's one retry
    shown = await drill.ask()
    assert EXTRACTIVE in shown
    assert shown.endswith("[1] handbook.md")
    assert _chat_requests(drill.model) - before == 2
    assert await drill.last_outcome() == ("done", "model_error")
    await drill.assert_nothing_lost()


async def test_a_model_that_sends_no_byte_times_out_and_the_retry_answers(drill: Drill) -> None:
    drill.model.delay_next(30.0)  # held past the client's timeout; the retry is answered
    shown = await drill.ask()
    assert shown.startswith(REPLY)
    assert await drill.last_outcome() == ("done", "generated")
    await drill.assert_nothing_lost()


async def test_a_model_silent_past_the_deadline_ends_with_a_note_not_silence(drill: Drill) -> None:
    drill.model.delay_next(30.0)
    drill.model.delay_next(30.0)  # request and retry both silent: the deadline (4 s) comes first
    shown = await drill.ask()
    assert messages.timed_out_note("en") in shown
    assert await drill.last_outcome() == ("done", "timed_out")
    await drill.assert_nothing_lost()


async def test_a_trickling_model_is_cut_at_the_deadline_with_what_it_wrote_and_a_note(drill: Drill) -> None:
    drill.model.tokens_per_second = 1.0  # a word a second, each within the read timeout: only the deadline ends it
    shown = await drill.ask()
    streamed = drill.model.streamed[-1]
    assert 0 < len(streamed.sent) < len(streamed.deltas)  # the model's stream was closed, not read to its end
    written = "".join(streamed.deltas[: len(streamed.sent)])
    note = messages.timed_out_note("en")
    assert note in shown
    partial = shown[: shown.index(note)].strip()
    # The deadline may fall while the last word is on the wire: what is shown is what was read, at most one word short.
    assert partial
    assert written.strip().startswith(partial)
    assert len(partial) >= len("".join(streamed.deltas[: len(streamed.sent) - 1]).strip())
    assert await drill.last_outcome() == ("done", "timed_out")
    await drill.assert_nothing_lost()


async def test_sse_comments_and_keep_alives_between_events_are_ignored(drill: Drill) -> None:
    drill.model.stream_fault_next("noise")
    shown = await drill.ask()
    assert shown.startswith(REPLY)
    assert await drill.last_outcome() == ("done", "generated")
    await drill.assert_nothing_lost()


async def test_a_stream_broken_before_its_first_word_falls_back_to_the_sources(drill: Drill) -> None:
    drill.model.malformed_stream_next()
    shown = await drill.ask()
    assert EXTRACTIVE in shown
    assert await drill.last_outcome() == ("done", "model_error")
    await drill.assert_nothing_lost()


@pytest.mark.parametrize("kind", ["garbage", "error", "cut", "reset"])
async def test_a_stream_broken_mid_answer_keeps_what_was_written_and_says_sorry(
    drill: Drill, kind: StreamFaultKind
) -> None:
    """A stream that ends cleanly without [DONE] ("cut") used to be taken for a whole answer: the person got half
    an answer with nothing saying so."""
    drill.model.stream_fault_next(kind, after=3)
    shown = await drill.ask()
    assert shown.startswith("The VPN client")
    assert shown.endswith(messages.turn_failed("en"))
    assert "w13" not in shown
    assert await drill.last_outcome() == ("failed", "failed")
    await drill.assert_nothing_lost()


async def test_a_5xx_on_a_draft_does_not_stop_later_answers_streaming_as_drafts(drill: Drill) -> None:
    """A 5xx is Telegram away for a moment, not Telegram refusing drafts: it used to turn drafts off until a restart,
    and every later answer in a private chat then grew by edits of a message instead."""
    fake = drill.world.fake
    drill.model.tokens_per_second = 20.0  # written over about a second, so the answer grows as a draft
    fake.fail_next(502, method="sendMessageDraft")
    first = drill.world.ask(QUESTION)
    assert (await telegram_reply(fake, first)).startswith(REPLY)
    assert any(call.params["chat_id"] == first for call in fake.calls("sendMessageDraft"))
    after = drill.world.ask(QUESTION)
    assert (await telegram_reply(fake, after)).startswith(REPLY)
    assert fake.drafts(after), "the answer after the 502 did not grow as a draft"
    await drill.assert_nothing_lost()
