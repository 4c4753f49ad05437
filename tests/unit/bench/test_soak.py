"""bench.soak's parts that decide its figures: what a question saw, the probe's verdict, the trends, the task gauge."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Sequence

import pytest

from bench.conversations import question, reply_for
from bench.soak_ledger import Asked, Tally
from bench.soak_load import Step, sustained
from bench.soak_watch import task_count, trend
from rag.rewrite import LlmRewriter
from rag.types import ChatMessage

FINAL = "Ticket 3: install it. done.\nSources: [1] vpn.md"


def _asked() -> Asked:
    asked = Asked(3, "web", "soak", FINAL)
    asked.sent = 10.0
    return asked


def test_a_question_shows_its_first_text_at_the_first_prefix_and_ends_at_the_complete_final() -> None:
    asked = _asked()
    asked.saw("…", 10.1)  # a placeholder: not the answer's text
    asked.saw("Ticket 3: install", 10.4)
    asked.saw(FINAL, 10.9, complete=False)  # the whole text, but the platform still shows it being written
    assert (asked.first_text, asked.done) == (10.4, None)
    asked.saw(FINAL, 11.2)
    assert (asked.first_text, asked.done, asked.answered) == (10.4, 11.2, True)


def test_a_question_that_showed_something_else_fails_saying_what_it_showed() -> None:
    asked = _asked()
    asked.saw("Sorry, something went wrong.", 10.5)
    asked.fail("no final within 120 s")
    assert not asked.answered
    assert asked.error == "no final within 120 s; last shown: 'Sorry, something went wrong.'"
    asked.saw(FINAL, 12.0)  # too late: it has ended
    assert asked.done is None


def _step(rate: float, p95_first: float, errors: int = 0, skipped: int = 0) -> Step:
    place = Tally("web", 20, 20 - errors, errors, [0.3] * 18 + [p95_first] * 2, [2.7] * 20, Counter())
    every = Tally("all", 20, 20 - errors, errors, place.first_text, place.to_final, Counter())
    return Step(rate, [place, every], skipped)


@pytest.mark.parametrize(
    ("steps", "rate"),
    [
        ([_step(2, 0.5), _step(4, 0.9), _step(6, 2.5), _step(8, 0.9)], 4),  # stops at the first failure
        ([_step(2, 0.5), _step(4, 0.9, errors=1)], 2),
        ([_step(2, 0.5), _step(4, 0.9, skipped=3)], 2),
        ([_step(2, 3.0)], None),
        ([_step(2, 0.5), _step(4, 1.9)], 4),
    ],
)
def test_the_sustained_rate_is_the_last_step_that_passed_before_the_first_that_did_not(
    steps: list[Step], rate: float | None
) -> None:
    assert sustained(steps, max_p95=2.0) == rate


def test_a_flat_series_with_noise_is_flat_and_a_steady_climb_is_not() -> None:
    flat = trend([(60.0 * i, 500 + (3 if i % 2 else -3)) for i in range(12)], tolerance=15)
    climbing = trend([(60.0 * i, 500 + 4 * i) for i in range(12)], tolerance=15)
    assert flat is not None
    assert climbing is not None
    assert flat.flat
    assert not climbing.flat
    assert climbing.slope_per_hour == pytest.approx(240)
    assert trend([(60.0 * i, float(i)) for i in range(4)], tolerance=1) is None


def test_in_flight_swings_that_happen_to_rise_over_the_last_half_are_not_a_climb() -> None:
    swinging = trend([(60.0 * i, value) for i, value in enumerate([80, 66, 95, 70, 90, 62, 70, 99, 60, 90])], 15)
    assert swinging is not None
    assert swinging.slope_per_hour * swinging.window_hours > 15  # the fitted line alone would call it growing
    assert not swinging.climbing
    assert swinging.flat


def test_the_task_gauge_is_read_from_metrics_when_there_is_one() -> None:
    with_gauge = "# TYPE ragbot_asyncio_tasks gauge\nragbot_asyncio_tasks 42\nragbot_chat_turns_total 9\n"
    assert task_count(with_gauge) == 42
    assert task_count("ragbot_chat_turns_total 9\n") is None


class _FakeModelPrompts:
    """A chat model answering as bench.model_process's fake does (bench.conversations.reply_for)."""

    model_id = "fake"

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        return reply_for({"messages": [{"role": m.role, "content": m.content} for m in messages]})

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        yield await self.complete(messages)


async def test_the_fake_model_gives_a_follow_up_question_back_as_its_own_rewrite() -> None:
    history = [(question(1), reply_for({"messages": [{"content": question(1)}]}))]
    result = await LlmRewriter(_FakeModelPrompts()).rewrite(question(2), history)
    assert (result.text, result.method) == (question(2), "model")
