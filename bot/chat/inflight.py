"""The turns a process is running, so a shutdown can let them finish within a grace and then cut the rest."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

log = logging.getLogger(__name__)

# Seconds a cut turn gets to show what it wrote with its note and to store it, after the grace.
CUT_WITHIN: Final = 5.0


class InFlight:
    """The tasks running a turn (or a command); `closing` once a drain began, so no new answer starts."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self.closing = False

    @contextmanager
    def track(self) -> Iterator[None]:
        """Count the current task in flight for the body."""
        task = asyncio.current_task()
        if task is None:
            yield
            return
        self._tasks.add(task)
        try:
            yield
        finally:
            self._tasks.discard(task)

    async def drain(self, grace: float) -> int:
        """Let the turns in flight end within `grace` seconds, then cancel the rest (each ends its answer with a
        note, within CUT_WITHIN); returns how many were cut."""
        self.closing = True
        running = {task for task in self._tasks if not task.done()}
        if running:
            log.info("shutdown=draining turns=%d grace=%.0fs", len(running), grace)
            await asyncio.wait(running, timeout=grace)
        left = {task for task in self._tasks if not task.done()}
        for task in left:
            task.cancel()
        if left:
            log.warning("shutdown=cutting turns=%d", len(left))
            await asyncio.wait(left, timeout=CUT_WITHIN)
        return len(left)
