"""The soak's markdown section: the probe, the soak's figures per place, the admin's work, the per-minute samples,
and the verdicts on the serve process's memory, fds, threads and tasks."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.log_counts import LogTally
from bench.report import ms_at, spread, top
from bench.soak_admin import AdminAction, Page
from bench.soak_ledger import Ledger, Tally, tally
from bench.soak_load import Step
from bench.soak_watch import Sample, Trend, trend

_TASK = "_asyncio.Task"

# How much each figure may grow after the warm-up and still read as flat (see Trend.flat): RSS 3 % of its first
# sample; fds and tasks a few more than the answers in flight at one instant move them; threads the to_thread pool's
# swing.
_TOLERANCES: dict[str, Callable[[float], float]] = {
    "RSS (MB)": lambda first: 0.03 * first,
    "open fds": lambda first: 5 + 0.05 * first,
    "threads": lambda first: 2,
    "asyncio tasks": lambda first: 5 + 0.10 * first,
}


@dataclass(frozen=True, slots=True)
class SoakRun:
    """Everything one run measured, for the report."""

    header: str
    conditions: list[str]
    steps: list[Step]
    max_p95: float
    rate: float
    rate_note: str
    ledger: Ledger
    samples: list[Sample]
    started: float
    soak_started: float
    warm_samples: int
    soak_seconds: float
    idle: tuple[Sample, Sample]
    actions: list[AdminAction]
    page: Page
    logged: LogTally
    metrics_note: str
    # A debug run's live objects by type (bench.soak_objects): (time, counts), one a sample period.
    objects: list[tuple[float, Counter[str]]]


def _tally_row(t: Tally) -> str:
    reasons = top(t.reasons, 3) if t.errors else ""
    return (
        f"| {t.where} | {t.asked} | {t.answered} | {t.errors}{f' ({reasons})' if reasons else ''} | "
        f"{spread(t.first_text)} | {ms_at(t.first_text, 1.0)} | {spread(t.to_final)} |"
    )


def _probe(run: SoakRun) -> list[str]:
    if not run.steps:
        return [f"No probe: the rate was given ({run.rate:g} questions/s).", ""]
    lines = [
        f"Probe: each rate for the same number of seconds in rising order, stopped at the first that failed (an "
        f"error, a skipped arrival, or a place's p95 first visible text over {run.max_p95:g} s).",
        "",
        "| offered (q/s) | asked | answered | errors | skipped | first text p95 per place (ms) | passes |",
        "| ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for step in run.steps:
        every = next(t for t in step.tallies if t.where == "all")
        places = ", ".join(f"{t.where} {ms_at(t.first_text, 0.95)}" for t in step.tallies if t.where != "all")
        passes = "yes" if step.passes(run.max_p95) else "**no**"
        lines.append(
            f"| {step.rate:g} | {every.asked} | {every.answered} | {every.errors} | {step.skipped} | {places} | "
            f"{passes} |"
        )
    return [*lines, ""]


def _places(run: SoakRun) -> list[str]:
    tallies = run.ledger.by_place("soak")
    every = tallies[-1]
    lines = [
        f"**Soak at {run.rate:g} questions/s offered** ({run.rate_note}): {every.asked} questions in "
        f"{run.soak_seconds / 60:.1f} minutes, {every.answered / run.soak_seconds:.2f} answered a second, "
        f"**{every.errors} without their exact final**.",
        "",
        "| place | asked | answered exact | errors | first visible text p50 / p95 (ms) | max (ms) | final p50 / p95 "
        "(ms) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        *(_tally_row(t) for t in tallies),
        "",
    ]
    after = run.samples[run.warm_samples :]
    if len(after) >= 2:
        cpu = after[-1].cpu_seconds - after[0].cpu_seconds
        answered = tally("span", run.ledger.sent_between(after[0].at, after[-1].at)).answered
        lines += [
            f"Serve CPU from the first sample after the warm-up to the last: {cpu:.0f} s in "
            f"{(after[-1].at - after[0].at) / 60:.1f} min ({cpu / (after[-1].at - after[0].at) * 100:.0f} % of a "
            f"core), {cpu / max(answered, 1) * 1000:.0f} ms per answered question (the admin's work included).",
            "",
        ]
    skipped = sum(count for (phase, _), count in run.ledger.skipped.items() if phase in ("soak", "warm-up"))
    if skipped:
        lines += [f"Arrivals skipped (every person of their place busy): {skipped}.", ""]
    return lines


def _admin(run: SoakRun) -> list[str]:
    lines = []
    for kind in ("setup", "schedule", "sync", "upload"):
        done = [action for action in run.actions if action.kind == kind]
        if not done:
            continue
        said = Counter(_shape(action.said, run.page.url) for action in done)
        seconds = [action.seconds for action in done]
        lines.append(
            f"- {kind}: {len(done)}, reply p50 / max {ms_at(seconds, 0.5)} / {ms_at(seconds, 1.0)} ms; "
            f"said: {top(said, 4)}"
        )
    page = run.page
    lines.append(
        f"- the page: fetched {page.fetched} times, {page.not_modified} answered 304 Not Modified, "
        f"{page.version} versions"
    )
    return ["Admin work in both phases (one web chat admin, one command at a time):", "", *lines, ""]


def _shape(said: str, url: str) -> str:
    """A reply with its changing parts (the page's address, numbers) taken out, to count replies by kind."""
    return re.sub(r"\d+", "N", said.replace(url, "PAGE"))[:90].replace("|", "/")


def _samples(run: SoakRun) -> list[str]:
    lines = [
        "| minute | phase | RSS (MB) | Weaviate RSS (MB) | fds | threads | SQLite connections | tasks | serve CPU "
        "(% of a core) | load (1 min) | asked | errors | first text p50 / p95 (ms) |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for index, sample in enumerate(run.samples):
        phase = "warm-up" if index < run.warm_samples else "soak"
        cpu = asked = errors = times = ""
        if index:
            before = run.samples[index - 1]
            cpu = f"{(sample.cpu_seconds - before.cpu_seconds) / (sample.at - before.at) * 100:.0f}"
            minute = tally("minute", run.ledger.sent_between(before.at, sample.at))
            asked, errors, times = str(minute.asked), str(minute.errors), spread(minute.first_text)
        weaviate = f"{sample.weaviate_mb:.0f}" if sample.weaviate_mb is not None else "n/a"
        tasks = f"{sample.tasks:.0f}" if sample.tasks is not None else "n/a"
        lines.append(
            f"| {(sample.at - run.started) / 60:.1f} | {phase} | {sample.rss_mb:.0f} | {weaviate} | {sample.fds:.0f} "
            f"| {sample.threads:.0f} | {_sqlite(sample)} | {tasks} | {cpu} | {sample.load:.2f} | {asked} | {errors} "
            f"| {times} |"
        )
    return [*lines, ""]


def _kinds(run: SoakRun) -> list[str]:
    """Figures and fds and threads by kind: idle before the warm-up, the first sample after it, the last, the most
    in any after it, and idle after the soak."""
    after = run.samples[run.warm_samples :]
    if len(after) < 2:
        return []
    before, idle = run.idle
    columns = [before, after[0], after[-1], idle]
    lines = [
        "The serve process idle (nothing asked, before the warm-up and after the soak drained and the admin stopped) "
        "and under load; fds and threads by kind (bench/proc_kinds.py, one reading):",
        "",
        "| figure | idle before | first after the warm-up | last | most after the warm-up | idle after |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    figures: list[tuple[str, Callable[[Sample], float]]] = [
        ("RSS (MB)", lambda s: round(s.rss_mb)),
        ("fds", lambda s: s.fds),
        ("threads", lambda s: s.threads),
        ("SQLite connections", _sqlite),
    ]
    for name, value in figures:
        cells = [f"{value(s):.0f}" for s in columns]
        lines.append(f"| {name} | {' | '.join(cells[:3])} | {max(value(s) for s in after):.0f} | {cells[3]} |")
    for label, counts in (("fd", [s.fd_kinds for s in columns]), ("thread", [s.thread_kinds for s in columns])):
        most = [s.fd_kinds if label == "fd" else s.thread_kinds for s in after]
        kinds = sorted(set().union(*counts, *most), key=lambda kind: -counts[2][kind])
        lines += [
            f"| {label} `{kind}` | {counts[0][kind]} | {counts[1][kind]} | {counts[2][kind]} | "
            f"{max(c[kind] for c in most)} | {counts[3][kind]} |"
            for kind in kinds
        ]
    return [*lines, ""]


def read_counts(path: Path) -> list[tuple[float, Counter[str]]]:
    """A debug run's object counts (bench.soak_objects), oldest first; none when the file is missing."""
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [(float(line["at"]), Counter(line["counts"])) for line in lines]


def _objects(run: SoakRun) -> list[str]:
    """The types whose live count grew most after the warm-up, with the tasks and the total."""
    after = _counted_after(run)
    if len(after) < 2:
        return []
    first, last = after[0][1], after[-1][1]
    answered = tally("span", run.ledger.sent_between(after[0][0], after[-1][0])).answered
    growers = sorted(set(first) | set(last), key=lambda kind: first[kind] - last[kind])[:12]
    kinds = list(dict.fromkeys([_TASK, *growers]))
    lines = [
        f"Live objects of the serve process by type (debug run, bench/soak_objects.py), the first count after the "
        f"warm-up against the last, {answered} questions answered in between; the 12 types that grew most, and "
        f"the asyncio tasks:",
        "",
        "| type | first after the warm-up | last | growth | per 1,000 answered | per count after the warm-up |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for kind in kinds:
        growth = last[kind] - first[kind]
        series = ", ".join(str(counts[kind]) for _, counts in after)
        lines.append(
            f"| `{kind}` | {first[kind]} | {last[kind]} | {growth:+d} | {growth / max(answered, 1) * 1000:+.1f} | "
            f"{series} |"
        )
    return [*lines, ""]


def _sqlite(sample: Sample) -> int:
    """Open SQLite database files: one per connection of the pool (each also has a -wal fd and a thread)."""
    return sum(count for kind, count in sample.fd_kinds.items() if kind.endswith((".sqlite3", ".sqlite", ".db")))


def _figures(samples: Sequence[Sample], tasks: Sequence[tuple[float, float]]) -> dict[str, list[tuple[float, float]]]:
    figures: dict[str, list[tuple[float, float]]] = {
        "RSS (MB)": [(s.at, s.rss_mb) for s in samples],
        "open fds": [(s.at, s.fds) for s in samples],
        "threads": [(s.at, s.threads) for s in samples],
    }
    if samples and all(s.tasks is not None for s in samples):
        figures["asyncio tasks"] = [(s.at, s.tasks) for s in samples if s.tasks is not None]
    elif tasks:
        figures["asyncio tasks"] = list(tasks)
    return figures


def verdicts(samples: Sequence[Sample], tasks: Sequence[tuple[float, float]] = ()) -> list[tuple[str, Trend | None]]:
    """Each figure's trend over the samples taken after the warm-up (the first of them its reference); the tasks
    from `tasks` (a debug run's live Task objects) when /metrics has no gauge for them."""
    found = []
    for name, points in _figures(samples, tasks).items():
        first = points[0][1] if points else 0.0
        found.append((name, trend(points, _TOLERANCES[name](first))))
    return found


def _counted_after(run: SoakRun) -> list[tuple[float, Counter[str]]]:
    """A debug run's object counts taken after the warm-up."""
    return [(at, counts) for at, counts in run.objects if at >= run.soak_started]


def _verdicts(run: SoakRun) -> list[str]:
    after = run.samples[run.warm_samples :]
    tasks = [(at, float(counts[_TASK])) for at, counts in _counted_after(run)]
    lines = []
    for name, found in verdicts(after, tasks):
        if found is None:
            lines.append(f"- {name}: too few samples after the warm-up for a verdict")
            continue
        word = "**flat**" if found.flat else "**GROWING**"
        lines.append(
            f"- {name}: {word}. First sample after the warm-up {found.first:.1f}, last half's mean "
            f"{found.last_half_mean:.1f} ({found.growth:+.1f}), last half's slope {found.slope_per_hour:+.1f} "
            f"± {2 * found.slope_error:.1f} per hour ({found.slope_per_hour * 24:+.0f} per day if it held); "
            f"tolerance {found.tolerance:.1f}"
        )
    if run.metrics_note and not tasks:
        lines.append(f"- asyncio tasks: {run.metrics_note}")
    elif run.metrics_note:
        lines.append(f"- asyncio tasks above: live `{_TASK}` objects in the debug counts ({run.metrics_note})")
    return ["Verdicts (the first sample after the warm-up against the last half of the samples):", "", *lines, ""]


def markdown(run: SoakRun) -> str:
    """The whole section."""
    logged = run.logged
    lines = [
        "## Issue 22: soak (`bench/soak.py`)",
        "",
        run.header,
        "",
        *run.conditions,
        "",
        *_probe(run),
        *_places(run),
        *_admin(run),
        "Per-minute samples of the `ragbot serve` process (each the median of 5 readings a second apart; asked, "
        "errors and first text count the questions sent in the minute before the sample):",
        "",
        *_samples(run),
        *_verdicts(run),
        *_kinds(run),
        *_objects(run),
        f"The service's log over the warm-up and the soak: WARNING+ records {top(logged.warnings, 5)}; "
        f"{logged.locked} 'database is locked', {logged.pool_timeouts} pool timeouts.",
        "",
    ]
    return "\n".join(lines)
