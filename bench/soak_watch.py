"""The serve process over a soak: a sample a minute (RSS, fds, threads, asyncio tasks, CPU); does each stay flat?

Each sample is the median of a few readings a second apart, so one answer's connections opening at that instant
do not read as a trend. Tasks come from /metrics when it exposes an asyncio task gauge (a metric whose name holds
"task" and "asyncio" or "loop"); otherwise that column stays empty.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import statistics
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from bench.proc_kinds import fd_kinds, listening_ports, thread_kinds
from bench.process_stats import process_cpu, status_mb

_READINGS = 5
_TASK_GAUGE = re.compile(r"^(\w*(?:asyncio|loop)\w*tasks?\w*)(\{[^}]*\})?\s+([0-9.eE+-]+)$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Sample:
    """One minute's reading of the serve process (and of its Weaviate child, and the machine's load)."""

    at: float
    rss_mb: float
    fds: float
    threads: float
    tasks: float | None
    cpu_seconds: float
    weaviate_mb: float | None
    load: float
    # The last reading's fds and threads by kind (bench.proc_kinds).
    fd_kinds: Counter[str]
    thread_kinds: Counter[str]


def _threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def child_named(pid: int, name: str) -> int | None:
    """A child process of `pid` whose command name starts with `name` (the local Weaviate of a serve), or None."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError):
            stat = (entry / "stat").read_text()
            command, rest = stat.split("(", 1)[1].rsplit(")", 1)
            if int(rest.split()[1]) == pid and command.startswith(name[:15]):  # comm is cut at 15 characters
                return int(entry.name)
    return None


def task_count(metrics: str) -> float | None:
    """The asyncio task gauge in a /metrics text (summed over its labels), or None when there is none."""
    found = _TASK_GAUGE.findall(metrics)
    return sum(float(value) for _, _, value in found) if found else None


class Watch:
    """Samples one serve process: its /proc figures and, when exposed, its /metrics task gauge."""

    def __init__(self, pid: int, metrics_url: str, peers: Mapping[int, str]) -> None:
        """`peers` names the ports the process talks to or listens on (its Weaviate's are found here)."""
        self.pid = pid
        self.metrics_url = metrics_url
        self.samples: list[Sample] = []
        self.metrics_error = ""
        self._weaviate = child_named(pid, "weaviate-server")
        weaviate = listening_ports(self._weaviate) if self._weaviate is not None else set()
        self._peers = {**dict.fromkeys(weaviate, "Weaviate"), **peers}
        self._own_ports = listening_ports(pid)

    async def sample(self, *, keep: bool = True) -> Sample:
        """The median of a few readings a second apart, the task gauge read once; kept in `samples` unless `keep` is
        False (a reading at idle, apart from the minute's samples)."""
        readings: list[tuple[float, int, int]] = []
        for index in range(_READINGS):
            if index:
                await asyncio.sleep(1.0)
            fds = len(os.listdir(f"/proc/{self.pid}/fd"))
            readings.append((status_mb(self.pid, "VmRSS"), fds, _threads(self.pid)))
        weaviate = None
        if self._weaviate is not None:
            with contextlib.suppress(OSError):
                weaviate = status_mb(self._weaviate, "VmRSS")
        sample = Sample(
            time.monotonic(),
            statistics.median(reading[0] for reading in readings),
            statistics.median(reading[1] for reading in readings),
            statistics.median(reading[2] for reading in readings),
            await self._tasks(),
            process_cpu(self.pid),
            weaviate,
            os.getloadavg()[0],
            fd_kinds(self.pid, self._own_ports, self._peers),
            thread_kinds(self.pid),
        )
        if keep:
            self.samples.append(sample)
        return sample

    async def _tasks(self) -> float | None:
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http,
                http.get(self.metrics_url) as response,
            ):
                response.raise_for_status()
                return task_count(await response.text())
        except (aiohttp.ClientError, TimeoutError) as exc:
            self.metrics_error = f"{type(exc).__name__}: {exc}"[:160]
            return None

    async def every(self, seconds: float) -> None:
        """Sample now and then every `seconds` (from the first sample's start), until cancelled."""
        started = time.monotonic()
        while True:
            await self.sample()
            await asyncio.sleep(max(0.0, started + seconds * len(self.samples) - time.monotonic()))


@dataclass(frozen=True, slots=True)
class Trend:
    """One figure after the warm-up: its first sample, its last half's mean and fitted slope (with the slope's
    standard error), and the tolerance."""

    first: float
    last_half_mean: float
    slope_per_hour: float
    slope_error: float
    window_hours: float
    tolerance: float

    @property
    def growth(self) -> float:
        """The last half's mean less the first sample after the warm-up."""
        return self.last_half_mean - self.first

    @property
    def climbing(self) -> bool:
        """Whether the last half's own trend, over its window, passes the tolerance, and the slope is more than two
        standard errors above 0 (not the swing of the answers in flight at each sample)."""
        over = self.slope_per_hour * self.window_hours > self.tolerance
        return over and self.slope_per_hour - 2 * self.slope_error > 0

    @property
    def flat(self) -> bool:
        """Neither the level (the last half's mean over the first) grew past the tolerance, nor is it climbing."""
        return self.growth <= self.tolerance and not self.climbing


def trend(points: Sequence[tuple[float, float]], tolerance: float) -> Trend | None:
    """The trend of (seconds, value) samples taken after the warm-up; None with fewer than 5 samples.

    The last half is the samples from the middle on (the middle one included when the count is odd); its slope is a
    least-squares fit, in units per hour.
    """
    if len(points) < 5:
        return None
    half = list(points[len(points) // 2 :])
    hours = [(at - half[0][0]) / 3600 for at, _ in half]
    values = [value for _, value in half]
    fit = statistics.linear_regression(hours, values)
    residuals = sum((value - fit.intercept - fit.slope * hour) ** 2 for hour, value in zip(hours, values, strict=True))
    spread = sum((hour - statistics.fmean(hours)) ** 2 for hour in hours)
    error = math.sqrt(residuals / (len(half) - 2) / spread) if spread else math.inf
    return Trend(points[0][1], statistics.fmean(values), fit.slope, error, hours[-1], tolerance)
