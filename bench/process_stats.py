"""A process as the benchmarks watch it: resident memory and its peak, CPU seconds, and this event loop's lag."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path


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
