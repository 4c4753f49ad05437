"""The soak's questions: each one as its person saw it (sent, first answer text, final), and their figures."""

from __future__ import annotations

import asyncio
import random
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from bench.report import spread

T = TypeVar("T")


@dataclass(slots=True, eq=False)
class Asked:
    """One question: where and in which phase it was asked, the final its person must see, and what they saw.

    Times are time.monotonic(). `first_text` is the first accepted call (or SSE delta) that showed answer text, a
    non-empty prefix of the final; `done` the moment the final showed whole. `error` says why it has no final.
    """

    number: int
    where: str
    phase: str
    expected: str
    sent: float = 0.0
    first_text: float | None = None
    done: float | None = None
    error: str | None = None
    # The last text shown that was neither the final nor a step towards it (a notice, an apology).
    other: str = ""
    ended: asyncio.Event = field(default_factory=asyncio.Event)

    def saw(self, text: str | None, at: float, *, complete: bool = True) -> None:
        """The chat showed `text` at `at`; `complete` False while the platform still marks it as being written."""
        if self.ended.is_set() or not text:
            return
        if text == self.expected and complete:
            self.first_text = self.first_text or at
            self.done = at
            self.ended.set()
        elif self.expected.startswith(text):
            self.first_text = self.first_text or at
        else:
            self.other = text[:160]

    def fail(self, why: str) -> None:
        """The question ends without its final."""
        if not self.ended.is_set():
            self.error = why if not self.other else f"{why}; last shown: {self.other!r}"
            self.ended.set()

    @property
    def answered(self) -> bool:
        """Whether its final showed, exactly."""
        return self.done is not None and self.error is None


class People(Generic[T]):
    """A platform's people (or chats); one question at a time each, so no turn queues behind another."""

    def __init__(self, people: Iterable[T], rng: random.Random) -> None:
        self._free = list(people)
        self._rng = rng

    def take(self) -> T | None:
        """A free one at random, now busy; None when everyone is busy."""
        if not self._free:
            return None
        index = self._rng.randrange(len(self._free))
        self._free[index], self._free[-1] = self._free[-1], self._free[index]
        return self._free.pop()

    @property
    def free(self) -> int:
        """How many are free."""
        return len(self._free)

    def give_back(self, person: T) -> None:
        """Free again."""
        self._free.append(person)


class Crowd(ABC, Generic[T]):
    """A place's people (web, Telegram private chats, ...), each asking one question at a time."""

    where: str

    def __init__(self, people: Iterable[T], rng: random.Random) -> None:
        self._people = People(people, rng)

    def has_free(self) -> bool:
        """Whether someone is free to ask."""
        return self._people.free > 0

    def start(self, asked: Asked) -> Coroutine[Any, Any, None]:
        """The asking of `asked` by a free person, to run as a task (call only when has_free())."""
        person = self._people.take()
        assert person is not None
        return self._asking(asked, person)

    async def _asking(self, asked: Asked, person: T) -> None:
        try:
            await self.ask_as(asked, person)
        finally:
            self._people.give_back(person)

    @abstractmethod
    def expected(self, number: int) -> str:
        """Question `number`'s final as its person must see it."""

    @abstractmethod
    async def ask_as(self, asked: Asked, person: T) -> None:
        """`person` asks `asked` and watches for its final (or its timeout)."""


@dataclass(frozen=True, slots=True)
class Tally:
    """The questions of one place and phase: how many, answered, failed, and their times in seconds."""

    where: str
    asked: int
    answered: int
    errors: int
    first_text: list[float]
    to_final: list[float]
    reasons: Counter[str]

    @property
    def first_text_line(self) -> str:
        """First visible text after sending, p50 / p95 in ms."""
        return spread(self.first_text)


def tally(where: str, questions: Sequence[Asked]) -> Tally:
    """The figures of these questions (all ended)."""
    answered = [asked for asked in questions if asked.answered]
    reasons = Counter((asked.error or "no final").split(";")[0] for asked in questions if not asked.answered)
    return Tally(
        where,
        len(questions),
        len(answered),
        len(questions) - len(answered),
        [asked.first_text - asked.sent for asked in answered if asked.first_text is not None],
        [asked.done - asked.sent for asked in answered if asked.done is not None],
        reasons,
    )


class Ledger:
    """Every question of the run, numbered in order (the number is its ticket: the fake model's known answer)."""

    def __init__(self) -> None:
        self.questions: list[Asked] = []
        # Arrivals that found everyone of their place busy: not asked, counted per (phase, place).
        self.skipped: Counter[tuple[str, str]] = Counter()

    def new(self, where: str, phase: str, expected: Callable[[int], str]) -> Asked:
        """The next question; its final is what `expected` makes of its number (the place's rendering)."""
        number = len(self.questions) + 1
        asked = Asked(number, where, phase, expected(number))
        self.questions.append(asked)
        return asked

    def of(self, phase: str) -> list[Asked]:
        """The questions of one phase."""
        return [asked for asked in self.questions if asked.phase == phase]

    def by_place(self, phase: str) -> list[Tally]:
        """One tally per place, in the order places first appear, then all places together."""
        questions = self.of(phase)
        places = list(dict.fromkeys(asked.where for asked in questions))
        tallies = [tally(where, [asked for asked in questions if asked.where == where]) for where in places]
        return [*tallies, tally("all", questions)]

    def sent_between(self, start: float, end: float) -> list[Asked]:
        """The questions sent in [start, end)."""
        return [asked for asked in self.questions if start <= asked.sent < end]
