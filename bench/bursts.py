"""Bursts of conversations for scenarios (a) and (b): a warm-up, one alone, then repeats started all at once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from bench.conversations import RUN_TIMEOUT, streams_by_ticket
from bench.figures import Figures, Seen, merge_runs, record_timings
from bench.ingestion_load import Background
from bench.log_counts import LogTally
from bench.model_process import ModelProcess
from bench.process_stats import BurstWatch
from bench.report import ms_at


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

    def log_mark(self) -> int:
        """Where the service's log stands now."""
        ...

    def log_since(self, mark: int) -> LogTally:
        """What the service logged since `mark`."""
        ...


@dataclass(frozen=True, slots=True)
class Plan:
    """How many conversations a burst has and how many bursts; beside an ingestion, more until it ends (at most
    `limit` when given: the bursts then may stop before the ingestion's last writes)."""

    conversations: int
    repeats: int
    limit: int | None = None


def _split_signs(person: Seen, final: str) -> None:
    """Keep in `shown` only the answer's text: what showed before it (a status, a placeholder) is a sign."""
    first = next(
        (index for index, (_, text) in enumerate(person.shown) if text.strip() and final.startswith(text)),
        len(person.shown),
    )
    person.signs.extend(at for at, _ in person.shown[:first])
    del person.shown[:first]


def analyse(
    figures: Figures, seen: list[Seen], fake: ModelProcess, expected: Callable[[int], str], *, edited: bool
) -> None:
    """Match each conversation with its model stream: lags, first sign and text, exactness, losses, counts."""
    records = streams_by_ticket(fake)
    interval = 1 / fake.tokens_per_second
    last_request = max((record.received for record in records.values()), default=0.0)
    for person in seen:
        figures.edits += person.edits
        figures.rate_limited += person.rate_limited
        figures.undelivered += person.undelivered
        for name, ms in person.stages.items():
            figures.stages.setdefault(name, []).append(ms / 1000)
        final = expected(person.number)
        _split_signs(person, final)
        signs = person.signs + [at for at, _ in person.shown[:1]]
        if signs:
            figures.first_sign.append(min(signs) - person.started)
        record = records.get(person.number)
        # Every question here reaches the model: one that did not was apologised for (or got nothing) before.
        if person.outcome == "failed" or person.final is None or record is None:
            figures.failed += 1
        if record is None:
            figures.mismatches.append(f"#{person.number}: the model was never asked ({person.outcome or person.error})")
            continue
        record_timings(figures, person, record, interval=interval, last_request=last_request, edited=edited)
        if len(record.sent) == len(record.deltas) and person.final != final:
            figures.lost += 1
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


async def burst(name: str, scenario: Scenario, watch: BurstWatch, fake: ModelProcess, numbers: list[int]) -> Figures:
    """Start one conversation per number at once and measure them."""
    await scenario.prepare(numbers)
    await fake.reset()
    seen = [Seen(number) for number in numbers]
    mark = scenario.log_mark()
    watch.start()
    await run_all(scenario.converse, seen)
    figures = Figures(name, len(seen))
    await watch.stop(figures)
    await fake.collect()
    logged = scenario.log_since(mark)
    figures.locked, figures.pool_timeouts, figures.warnings = logged.locked, logged.pool_timeouts, logged.warnings
    analyse(figures, seen, fake, scenario.expected, edited=scenario.edited)
    return figures


async def bursts(
    label: str, scenario: Scenario, fake: ModelProcess, plan: Plan, background: Background | None = None
) -> list[Figures]:
    """A warm-up turn, one conversation alone, then the plan's bursts, merged.

    With `background`, it starts after the turn alone, and bursts follow one another until it has ended (at least
    `plan.repeats`), so one is running whenever the ingestion writes.
    """
    watch = BurstWatch(scenario.pid, scenario.process)
    warm = await burst("warm-up", scenario, watch, fake, [0])
    if warm.exact != 1:
        raise SystemExit(f"the warm-up turn of {label} was not answered as expected: {warm.mismatches}")
    alone = await burst(f"{label}, 1 alone", scenario, watch, fake, [1])
    if background is None:
        return [alone, await _series(label, scenario, watch, fake, plan, lambda: False)]
    await background.start()
    merged = await _series(label, scenario, watch, fake, plan, background.running)
    ingestion = await background.finish()
    print(f"  ingestion: {ingestion.summary()}", flush=True)
    merged.notes.append(f"background ingestion: {ingestion.summary()}")
    return [alone, merged]


async def _series(
    label: str, scenario: Scenario, watch: BurstWatch, fake: ModelProcess, plan: Plan, more: Callable[[], bool]
) -> Figures:
    """`plan.repeats` bursts, more while `more()` says so (up to `plan.limit`), merged into one Figures."""
    runs: list[Figures] = []
    while len(runs) < plan.repeats or (more() and (plan.limit is None or len(runs) < plan.limit)):
        first = 2 + len(runs) * plan.conversations
        runs.append(await burst(label, scenario, watch, fake, list(range(first, first + plan.conversations))))
        last = runs[-1]
        print(
            f"  burst {len(runs)}: first text p50 {ms_at(last.first_visible, 0.5)} ms, exact {last.exact}, "
            f"failed {last.failed}, locked {last.locked}, pool timeouts {last.pool_timeouts}, {last.wall:.0f} s",
            flush=True,
        )
    merged = Figures(f"{label}, {plan.conversations} at once", sum(run.conversations for run in runs), repeats=runs)
    return merge_runs(merged, runs)
