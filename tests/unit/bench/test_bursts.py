"""bench.bursts.analyse: what a person saw, matched with the model's stream, as signs, answer text and losses."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from bench.bursts import analyse
from bench.figures import Figures, Seen
from fakes.openai_api import StreamedReply

_ANSWER = "Ticket 7: install it. done."


@dataclass
class _Model:
    tokens_per_second: float = 50.0
    streamed: list[StreamedReply] = field(default_factory=list)


def _streamed(number: int, received: float, finished: bool = True) -> StreamedReply:
    deltas = ("Ticket ", f"{number}: ", "install ", "it. ", "done.")
    sent = [received + 0.2 + index * 0.02 for index in range(len(deltas) if finished else 2)]
    return StreamedReply("".join(deltas), deltas, received, sent)


def test_a_placeholder_before_the_answer_is_its_first_sign_and_not_its_text() -> None:
    person = Seen(7, started=10.0, signs=[10.05])
    person.shown = [(10.1, "…"), (10.5, "Ticket 7: install"), (11.0, _ANSWER)]
    person.final, person.outcome = _ANSWER, "generated"
    figures = Figures("t", 1)

    analyse(figures, [person], _Model(streamed=[_streamed(7, 10.2)]), lambda number: _ANSWER, edited=True)

    assert figures.exact == 1
    assert figures.first_sign == pytest.approx([0.05])
    assert figures.first_visible == pytest.approx([0.3])  # 0.5 after the event, less the model's 0.2 s TTFT
    assert (figures.lost, figures.failed) == (0, 0)


def test_an_apology_before_the_model_was_asked_is_a_failed_turn() -> None:
    person = Seen(7, started=10.0)
    person.shown = [(10.4, "Sorry, something went wrong.")]
    person.final, person.outcome = "Sorry, something went wrong.", "generated"
    figures = Figures("t", 1)

    analyse(figures, [person], _Model(), lambda number: _ANSWER, edited=True)

    assert (figures.exact, figures.failed, figures.lost) == (0, 1, 0)
    assert figures.first_sign == pytest.approx([0.4])


def test_an_answer_the_model_finished_but_the_person_never_got_whole_is_lost() -> None:
    person = Seen(7, started=10.0)
    person.shown = [(10.5, "Ticket 7: install")]
    person.final, person.outcome = "Ticket 7: install", "generated"
    figures = Figures("t", 1)

    analyse(figures, [person], _Model(streamed=[_streamed(7, 10.2)]), lambda number: _ANSWER, edited=True)

    assert (figures.exact, figures.lost, figures.failed) == (0, 1, 0)
