"""Bursts of conversations for scenarios (a) and (b): a warm-up, one alone, then repeats started all at once."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from bench.conversations import RUN_TIMEOUT, streams_by_ticket
from bench.figures import Figures, Seen, merge_runs, record_timings
from bench.process_stats import BurstWatch
from bench.report import ms_at
from fakes.openai_api import FakeOpenAI


class Scenario(Protocol):
    """Where a burst's conversations run, and how their answers read when they are right."""

    process: str
    edited: bool

    @property
    def pid(self) -> int | str:
        """The process whose memory and CPU count ("self" for this one)."""
        ...

    async def prepare(self, numbers: list[int]) -> None:
        """Get ready for these conversations before the burst's clock starts."""
        ...

    async def converse(self, person: Seen) -> None:
        """Hold one conversation, recording what its person saw."""
        ...

    def expected(self, number: int) -> str:
        """The final text conversation `number` should end with."""
        ...


def analyse(
    figures: Figures, seen: list[Seen], fake: FakeOpenAI, expected: Callable[[int], str], *, edited: bool
) -> None:
    """Match each conversation with its model stream: lags, first visible text, exactness, counts."""
    records = streams_by_ticket(fake)
    interval = 1 / fake.tokens_per_second
    last_request = max((record.received for record in records.values()), default=0.0)
    for person in seen:
        figures.edits += person.edits
        figures.rate_limited += person.rate_limited
        figures.undelivered += person.undelivered
        for name, ms in person.stages.items():
            figures.stages.setdefault(name, []).append(ms / 1000)
        record = records.get(person.number)
        if record is None:
            figures.mismatches.append(f"#{person.number}: the model was never asked ({person.outcome or person.error})")
            continue
        record_timings(figures, person, record, interval=interval, last_request=last_request, edited=edited)
        final = expected(person.number)
        prefixes = all(final.startswith(text) for _, text in person.shown)
        if person.final == final and person.outcome == "generated" and prefixes and not person.error:
            figures.exact += 1
        else:
            figures.mismatches.append(
                f"#{person.number}: outcome={person.outcome} error={person.error} prefixes={prefixes} "
                f"final={person.final!r}"
            )


async def run_all(converse: Callable[[Seen], Coroutine[Any, Any, None]], seen: list[Seen]) -> None:
    """Start every conversation at once; the ones not done within RUN_TIMEOUT are cancelled and marked."""
    tasks = [asyncio.create_task(converse(person)) for person in seen]
    _, pending = await asyncio.wait(tasks, timeout=RUN_TIMEOUT)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for person, task in zip(seen, tasks, strict=True):
        if task in pending:
            person.error = "timed out"
        elif (exc := task.exception()) is not None:
            person.error = repr(exc)


async def burst(name: str, scenario: Scenario, watch: BurstWatch, fake: FakeOpenAI, numbers: list[int]) -> Figures:
    """Start one conversation per number at once and measure them."""
    await scenario.prepare(numbers)
    fake.streamed.clear()
    seen = [Seen(number) for number in numbers]
    watch.start()
    await run_all(scenario.converse, seen)
    figures = Figures(name, len(seen))
    await watch.stop(figures)
    analyse(figures, seen, fake, scenario.expected, edited=scenario.edited)
    return figures


async def bursts(label: str, scenario: Scenario, fake: FakeOpenAI, args: argparse.Namespace) -> list[Figures]:
    """A warm-up turn, one conversation alone, then `repeats` bursts of `conversations`, merged."""
    watch = BurstWatch(scenario.pid, scenario.process)
    warm = await burst("warm-up", scenario, watch, fake, [0])
    if warm.exact != 1:
        raise SystemExit(f"the warm-up turn of {label} was not answered as expected: {warm.mismatches}")
    alone = await burst(f"{label}, 1 alone", scenario, watch, fake, [1])
    runs = []
    for repeat in range(args.repeats):
        first = 2 + repeat * args.conversations
        runs.append(await burst(label, scenario, watch, fake, list(range(first, first + args.conversations))))
        print(f"  burst {repeat + 1}: lag p95 {ms_at(runs[-1].lags, 0.95)} ms", flush=True)
    return [alone, _merged(f"{label}, {args.conversations} at once", runs)]


def _merged(name: str, runs: list[Figures]) -> Figures:
    return merge_runs(Figures(name, sum(run.conversations for run in runs), repeats=runs), runs)
