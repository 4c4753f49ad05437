"""A process as the benchmarks watch it: resident memory and its peak, CPU seconds, and this event loop's lag."""

from __future__ import annotations

import asyncio
import os
import resource
import time
from pathlib import Path

from bench.figures import Figures, Memory


class LoopLag:
    """How late this process's event loop wakes a 20 ms sleeper: the scheduling delay every task sees."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start sampling."""
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """Stop sampling."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(0.02)
            self.delays.append(time.monotonic() - before - 0.02)


def status_mb(pid: int | str, key: str) -> float:
    """A memory figure of /proc/PID/status (VmRSS, VmHWM), MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak(pid: int | str) -> None:
    """Make VmHWM start again from the current RSS (Linux clear_refs), so a burst's own peak can be read."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def process_cpu(pid: int | str) -> float:
    """CPU seconds (user + system) the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class BurstWatch:
    """One process watched burst by burst: its RSS before and at the burst's peak, CPU and wall seconds, loop lag."""

    def __init__(self, pid: int | str, process: str) -> None:
        self.pid = pid
        self.process = process
        self.lifetime_peak = 0.0
        self.started = 0.0
        self._before = 0.0
        self._cpu = 0.0
        self._lag = LoopLag()

    def start(self) -> None:
        """A burst begins: RSS now, the peak so far (then reset, so the burst's own peak can be read), CPU, time."""
        self._before = status_mb(self.pid, "VmRSS")
        # The peak so far (ru_maxrss for this process), kept before the reset that lets this burst's peak be read.
        if self.pid == "self":
            so_far = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        else:
            so_far = status_mb(self.pid, "VmHWM")
        self.lifetime_peak = max(self.lifetime_peak, so_far)
        reset_peak(self.pid)
        self._lag = LoopLag()
        self._lag.start()
        self._cpu, self.started = process_cpu(self.pid), time.monotonic()

    async def stop(self, figures: Figures) -> None:
        """The burst is over: its wall and CPU seconds, the loop's lag and the memory figures, into `figures`."""
        figures.wall, figures.cpu_seconds = time.monotonic() - self.started, process_cpu(self.pid) - self._cpu
        await self._lag.stop()
        figures.loop_lag = self._lag.delays
        peak = status_mb(self.pid, "VmHWM")
        self.lifetime_peak = max(self.lifetime_peak, peak)
        figures.memory = Memory(self._before, peak, self.lifetime_peak, self.process)
