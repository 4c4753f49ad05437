"""What the concurrency benchmarks measure: each conversation as seen, and a scenario's figures made from them."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from fakes.openai_api import StreamedReply


@dataclass
class Seen:
    """One conversation as its person saw it: (time, text) of each send/edit (a) or SSE delta (b), and the end."""

    number: int
    started: float = 0.0
    shown: list[tuple[float, str]] = field(default_factory=list)
    # When anything else showed that the bot was at it: typing (a), a status or message event (b).
    signs: list[float] = field(default_factory=list)
    # (a) only: (time, characters pushed so far) as the pipeline handed text to the reply stream.
    pushed: list[tuple[float, int]] = field(default_factory=list)
    messages: int = 0
    final: str | None = None
    sources: list[str] = field(default_factory=list)
    outcome: str = ""
    edits: int = 0
    rate_limited: int = 0
    undelivered: int = 0
    error: str = ""
    stages: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Memory:
    """Resident memory of the service's process, MB: before the burst, the burst's peak, the lifetime peak."""

    before: float
    burst_peak: float
    lifetime_peak: float
    process: str


@dataclass
class Figures:
    """One scenario's results (times in seconds)."""

    name: str
    conversations: int
    lags: list[float] = field(default_factory=list)
    lags_retrieving: list[float] = field(default_factory=list)
    lags_streaming: list[float] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)
    missing_tokens: int = 0
    first_visible: list[float] = field(default_factory=list)
    # The first sign of any kind (typing, status, placeholder, text) after the event, TTFT not taken off.
    first_sign: list[float] = field(default_factory=list)
    to_model: list[float] = field(default_factory=list)
    model_ttft: list[float] = field(default_factory=list)
    pace: list[float] = field(default_factory=list)
    exact: int = 0
    # The model wrote its whole answer, but the person did not end with exactly it.
    lost: int = 0
    # Turns that ended in an apology, or with no answer at all.
    failed: int = 0
    mismatches: list[str] = field(default_factory=list)
    edits: int = 0
    rate_limited: int = 0
    undelivered: int = 0
    stages: dict[str, list[float]] = field(default_factory=dict)
    memory: Memory | None = None
    loop_lag: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0
    wall: float = 0.0
    # What the service logged during the burst (bench.log_counts), per record.
    locked: int = 0
    pool_timeouts: int = 0
    warnings: Counter[str] = field(default_factory=Counter)
    # What else the report should say about the run (the background ingestion's outcome).
    notes: list[str] = field(default_factory=list)
    # The bursts merged into these figures, when there were several.
    repeats: list[Figures] = field(default_factory=list)


def _first_reaching(points: list[tuple[float, int]], need: int, cursor: int) -> int:
    """The index, from `cursor` on, of the first point whose length reaches `need` (len(points) if none)."""
    while cursor < len(points) and points[cursor][1] < need:
        cursor += 1
    return cursor


def record_timings(
    figures: Figures, person: Seen, record: StreamedReply, *, interval: float, last_request: float, edited: bool
) -> list[float]:
    """Add one conversation's timings to `figures`: each delta's lag to the text showing it, first visible text.

    `edited`: what is shown is whole edits of the answer so far, stripped of trailing space (EditingReplyStream
    strips it), rather than SSE deltas that add the model's text as it came. `last_request`: when the last turn of
    the burst reached the model (until then other turns were still queued or retrieving beside the streams).
    Returns this conversation's lags.
    """
    ttft = record.sent[0] - record.received
    figures.model_ttft.append(ttft)
    figures.to_model.append(record.received - person.started)
    figures.pace.extend(sent - (record.sent[0] + index * interval) for index, sent in enumerate(record.sent))
    if person.shown:
        figures.first_visible.append(person.shown[0][0] - person.started - ttft)
    shown = [(at, len(text)) for at, text in person.shown]
    lags: list[float] = []
    end, cursor, pushed = 0, 0, 0
    for delta, sent in zip(record.deltas, record.sent, strict=True):
        end += len(delta)
        need = len(record.reply[:end].rstrip()) if edited else end
        cursor = _first_reaching(shown, need, cursor)
        if cursor == len(shown):
            figures.missing_tokens += 1
            continue
        lag = shown[cursor][0] - sent
        lags.append(lag)
        (figures.lags_retrieving if sent <= last_request else figures.lags_streaming).append(lag)
        if person.pushed:
            pushed = _first_reaching(person.pushed, end, pushed)
            if pushed < len(person.pushed):
                figures.arrivals.append(person.pushed[pushed][0] - sent)
    figures.lags.extend(lags)
    return lags


F = TypeVar("F", bound=Figures)


def merge_runs(merged: F, runs: Sequence[F], keep: tuple[str, ...] = ("name", "conversations", "repeats")) -> F:
    """The bursts' figures as one (into `merged`): lists joined, counters and counts added, memory peaks kept."""
    for spec in dataclasses.fields(merged):
        if spec.name in (*keep, "memory"):
            continue
        for run in runs:
            value, total = getattr(run, spec.name), getattr(merged, spec.name)
            if isinstance(total, Counter):
                total.update(value)
            elif isinstance(total, list):
                total.extend(value)
            elif isinstance(total, dict):
                for key, times in value.items():
                    total.setdefault(key, []).extend(times)
            else:
                setattr(merged, spec.name, total + value)
    memories = [memory for run in runs if (memory := run.memory) is not None]
    merged.memory = Memory(
        memories[0].before,
        max(memory.burst_peak for memory in memories),
        max(memory.lifetime_peak for memory in memories),
        memories[0].process,
    )
    return merged
