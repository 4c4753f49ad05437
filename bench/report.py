"""The concurrency benchmarks' report: percentiles in milliseconds, and one markdown table per kind of figures."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from bench.common import percentile
from bench.figures import Figures


def ms_at(values: list[float], fraction: float) -> str:
    """The percentile at `fraction` in whole milliseconds, or n/a."""
    return f"{percentile(values, fraction) * 1000:.0f}" if values else "n/a"


def spread(values: list[float]) -> str:
    """p50 / p95 in milliseconds."""
    return f"{ms_at(values, 0.5)} / {ms_at(values, 0.95)}"


def top(counter: Counter[str], count: int) -> str:
    """The `count` commonest keys of a counter with their counts, or 0 when it is empty."""
    return ", ".join(f"{key} {value}" for key, value in counter.most_common(count)) or "0"


def _mb(figures: Figures, part: str) -> str:
    return f"{getattr(figures.memory, part):.0f}" if figures.memory else "n/a"


# The rows of a table of Figures; a kind with rows of its own (TelegramFigures.rows, SlackFigures.rows) has those.
ROWS: list[tuple[str, Callable[[Figures], str]]] = [
    ("model token -> visible, p50 / p95 (ms)", lambda f: spread(f.lags)),
    ("... p95 of each burst (ms)", lambda f: ", ".join(ms_at(run.lags, 0.95) for run in f.repeats or [f])),
    ("... max (ms)", lambda f: ms_at(f.lags, 1.0)),
    ("... while turns still queued or retrieving, p50 / p95", lambda f: spread(f.lags_retrieving)),
    ("... once every turn was streaming, p50 / p95", lambda f: spread(f.lags_streaming)),
    ("model token -> reply stream's push(), p50 / p95 (ms)", lambda f: spread(f.arrivals)),
    ("tokens never shown", lambda f: str(f.missing_tokens)),
    ("first visible sign after the event, p50 / p95 (ms)", lambda f: spread(f.first_sign)),
    ("first answer text minus the model's TTFT, p50 / p95 (ms)", lambda f: spread(f.first_visible)),
    ("... p50 of each burst (ms)", lambda f: ", ".join(ms_at(run.first_visible, 0.5) for run in f.repeats or [f])),
    ("turn start -> request at the model, p50 / p95 (ms)", lambda f: spread(f.to_model)),
    ("model's TTFT measured at the fake, p50 / p95 (ms)", lambda f: spread(f.model_ttft)),
    ("fake's deltas late on their 50/s schedule, p95 (ms)", lambda f: ms_at(f.pace, 0.95)),
    ("finals complete and exact", lambda f: f"{f.exact} / {f.conversations}"),
    ("lost finals / failed turns", lambda f: f"{f.lost} / {f.failed}"),
    ('pool timeouts / "database is locked" (log records)', lambda f: f"{f.pool_timeouts} / {f.locked}"),
    ("sends + edits (a) / SSE deltas (b)", lambda f: str(f.edits)),
    ("rate limited / undelivered", lambda f: f"{f.rate_limited} / {f.undelivered}"),
    ("RSS before the burst (MB)", lambda f: _mb(f, "before")),
    ("peak RSS during the burst (MB)", lambda f: _mb(f, "burst_peak")),
    ("peak RSS, whole process life (MB)", lambda f: _mb(f, "lifetime_peak")),
    ("service CPU s / wall s of the burst", lambda f: f"{f.cpu_seconds:.1f} / {f.wall:.1f}"),
    ("bench event-loop lag p50 / p95 / max (ms)", lambda f: f"{spread(f.loop_lag)} / {ms_at(f.loop_lag, 1.0)}"),
]


def _per_turn_ms(figures: Figures) -> str:
    return f"{figures.cpu_seconds / figures.conversations * 1000:.0f}" if figures.conversations else "n/a"


def _turns_per_second(figures: Figures) -> str:
    return f"{figures.conversations / figures.wall:.1f}" if figures.wall else "n/a"


# Issue 20's goals, one row each: what a person sees, what is lost, what the service spends, what the store said.
SUMMARY: list[tuple[str, Callable[[Figures], str]]] = [
    ("first visible sign after the event, p50 / p95 (ms)", lambda f: spread(f.first_sign)),
    ("first answer text minus the model's TTFT, p50 / p95 (ms)", lambda f: spread(f.first_visible)),
    ("... p50 of each burst (ms)", lambda f: ", ".join(ms_at(run.first_visible, 0.5) for run in f.repeats or [f])),
    ("turn start -> request at the model, p50 / p95 (ms)", lambda f: spread(f.to_model)),
    ("model token -> visible, p50 / p95 (ms)", lambda f: spread(f.lags)),
    ("finals delivered exact", lambda f: f"{f.exact} / {f.conversations}"),
    ("lost finals (model done, final not delivered exact)", lambda f: str(f.lost)),
    ("failed turns (apology or no answer)", lambda f: str(f.failed)),
    ("service CPU per turn (ms)", _per_turn_ms),
    ("service CPU s / wall s of the bursts", lambda f: f"{f.cpu_seconds:.1f} / {f.wall:.1f}"),
    ("turns per second (turns / burst wall)", _turns_per_second),
    ("service RSS before / peak in the burst (MB)", lambda f: f"{_mb(f, 'before')} / {_mb(f, 'burst_peak')}"),
    ("pool timeouts (log records)", lambda f: str(f.pool_timeouts)),
    ('"database is locked" (log records)', lambda f: str(f.locked)),
    ("service WARNING+ records", lambda f: top(f.warnings, 3)),
]


def print_summary(results: list[Figures]) -> None:
    """Issue 20's table: one column per scenario, database and size (bursts merged; the turns alone left out)."""
    columns = [figures for figures in results if figures.repeats and type(figures) is Figures]
    if not columns:
        return
    print("| measure | " + " | ".join(figures.name for figures in columns) + " |")
    print("| --- | " + " | ".join("---:" for _ in columns) + " |")
    for label, cell in SUMMARY:
        print(f"| {label} | " + " | ".join(cell(figures) for figures in columns) + " |")
    print()
    for figures in columns:
        for note in figures.notes:
            print(f"{figures.name}: {note}")


def print_tables(results: list[Figures]) -> None:
    """One table per kind of figures (a kind may have rows of its own), then each scenario's stages and misses."""
    kinds: dict[type[Figures], list[Figures]] = {}
    for figures in results:
        kinds.setdefault(type(figures), []).append(figures)
    for kind, columns in kinds.items():
        print("| measure | " + " | ".join(figures.name for figures in columns) + " |")
        print("| --- | " + " | ".join("---:" for _ in columns) + " |")
        for label, cell in getattr(kind, "rows", ROWS):
            print(f"| {label} | " + " | ".join(cell(figures) for figures in columns) + " |")
        print()
    for figures in results:
        if figures.memory:
            print(f"\n{figures.name}: RSS of {figures.memory.process}; Weaviate is a process of its own.")
        if figures.stages:
            print("\nPipeline stages, p50 / p95 (ms):\n\n| stage | p50 / p95 |\n| --- | ---: |")
            for name, times in figures.stages.items():
                print(f"| {name} | {spread(times)} |")
        for line in figures.mismatches[:5]:
            print(f"  not exact: {line[:160]} … {line[-160:]}")
