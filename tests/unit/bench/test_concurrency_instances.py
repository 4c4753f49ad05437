"""bench.concurrency_instances: CPU between two readings, and several instances' bursts merged into one column."""

from __future__ import annotations

from collections import Counter

from bench.concurrency_instances import InstanceFigures, _used, turns_per_second
from bench.figures import Memory, merge_runs


def test_cpu_between_readings_counts_a_process_started_in_between_from_zero_and_ignores_one_gone() -> None:
    before = {10: 5.0, 11: 1.0, 12: 7.0}
    after = {10: 6.5, 11: 1.25, 13: 0.5}

    assert _used(before, after) == 1.5 + 0.25 + 0.5


def _burst(exact: int, wall: float, cpu: dict[str, float], peak: dict[str, float]) -> InstanceFigures:
    figures = InstanceFigures("b", 10, instances=len(cpu), wall=wall, exact=exact)
    figures.instance_cpu = {name: [seconds] for name, seconds in cpu.items()}
    figures.instance_peak = {name: [mb] for name, mb in peak.items()}
    figures.served = Counter(dict.fromkeys(cpu, 5))
    figures.statement_calls = Counter({"BEGIN": 10})
    figures.memory = Memory(400.0, max(peak.values()), max(peak.values()), "x")
    return figures


def test_merged_bursts_keep_each_instance_apart_and_count_turns_per_second_over_all_the_walls() -> None:
    runs = [
        _burst(10, 4.0, {"i0": 1.0, "i1": 2.0}, {"i0": 450.0, "i1": 460.0}),
        _burst(8, 6.0, {"i0": 3.0, "i1": 4.0}, {"i0": 470.0, "i1": 440.0}),
    ]
    total = InstanceFigures("merged", 20, instances=2, repeats=list(runs))

    merged = merge_runs(total, runs, keep=("name", "conversations", "repeats", "instances"))

    assert merged.instances == 2
    assert merged.instance_cpu == {"i0": [1.0, 3.0], "i1": [2.0, 4.0]}
    assert merged.instance_peak == {"i0": [450.0, 470.0], "i1": [460.0, 440.0]}
    assert merged.served == Counter({"i0": 10, "i1": 10})
    assert merged.statement_calls == Counter({"BEGIN": 20})
    assert turns_per_second(merged) == 18 / 10.0
