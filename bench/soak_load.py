"""The soak's steady load: questions arriving at random (a Poisson process) at a set rate, spread over the places.

Arrivals are open-loop: the next one comes when its time comes, whether or not the earlier ones were answered, so a
service that falls behind shows it as latency and errors instead of slowing the load down. An arrival whose place
has everyone busy (each person asks one question at a time) is counted as skipped, not asked.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.common import percentile
from bench.soak_ledger import Crowd, Ledger, Tally

# A place's people, of any kind of person.
Askers = Crowd[Any]


class Load:
    """Questions at a rate over weighted places, every one in the ledger, each asked in a task of its own."""

    def __init__(self, places: Sequence[tuple[Askers, float]], ledger: Ledger, rng: random.Random) -> None:
        self._places = [place for place, _ in places]
        self._weights = [weight for _, weight in places]
        self._ledger = ledger
        self._rng = rng
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self, rate: float, seconds: float, phase: str) -> None:
        """Arrivals at `rate` a second for `seconds`, their questions marked `phase`."""
        end = time.monotonic() + seconds
        at = time.monotonic()
        while (at := at + self._rng.expovariate(rate)) < end:
            await asyncio.sleep(max(0.0, at - time.monotonic()))
            place = self._rng.choices(self._places, self._weights)[0]
            if not place.has_free():
                self._ledger.skipped[phase, place.where] += 1
                continue
            asked = self._ledger.new(place.where, phase, place.expected)
            task = asyncio.create_task(place.start(asked), name=f"soak-question-{asked.number}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        await asyncio.sleep(max(0.0, end - time.monotonic()))

    async def drain(self) -> None:
        """Wait for every question asked so far to end (each has its own timeout)."""
        if self._tasks:
            await asyncio.wait(list(self._tasks))


def parse_mix(text: str) -> dict[str, float]:
    """`web=5,telegram-private=2,...` as weights by place."""
    mix = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        mix[name.strip()] = float(weight)
    return mix


@dataclass(frozen=True, slots=True)
class Step:
    """One probe step: the rate offered, its tallies (per place, then all), and its skipped arrivals."""

    rate: float
    tallies: list[Tally]
    skipped: int

    def worst_p95(self) -> float:
        """The highest p95 of first visible text among the places (seconds), inf when a place saw no text."""
        places = [tally for tally in self.tallies if tally.where != "all" and tally.asked]
        if any(not tally.first_text for tally in places):
            return float("inf")
        return max((percentile(tally.first_text, 0.95) for tally in places), default=float("inf"))

    def errors(self) -> int:
        """Questions of the step without their exact final."""
        return sum(tally.errors for tally in self.tallies if tally.where == "all")

    def passes(self, max_p95: float) -> bool:
        """No errors, no skipped arrival, and every place's p95 first visible text within `max_p95` seconds."""
        return self.errors() == 0 and self.skipped == 0 and self.worst_p95() <= max_p95


def sustained(steps: Sequence[Step], max_p95: float) -> float | None:
    """The rate of the last step that passed before the first that did not (steps in rising order), or None."""
    best = None
    for step in steps:
        if not step.passes(max_p95):
            break
        best = step.rate
    return best


def skipped_in(ledger: Ledger, phase: str) -> int:
    """Arrivals of a phase that found their place's people all busy."""
    return sum(count for (counted, _), count in ledger.skipped.items() if counted == phase)


def weighted(places: Mapping[str, Askers], mix: Mapping[str, float]) -> list[tuple[Askers, float]]:
    """The places with a weight in `mix`, each with its weight."""
    unknown = set(mix) - set(places)
    if unknown:
        raise ValueError(f"unknown places in the mix: {', '.join(sorted(unknown))} (known: {', '.join(places)})")
    return [(places[name], weight) for name, weight in mix.items() if weight > 0]
