"""Answers whose process died are finished by another: no question a platform was told "received" is lost.

Every question is stored with its answer's placeholder, and the process writing it, before it waits for its turn
(ConversationManager._accept). A sweep on every process finds placeholders still `streaming` under a process that
is no longer alive (its presence lease lapsed: killed, crashed, or restarted under a new name), takes each over
with one conditional UPDATE (one process wins) and answers its question again in a new message that says it
continues. An orphan older than `max_age` is closed instead: an answer that late helps nobody, and a store that
kept answers `streaming` from an older ragbot must not flood its chats at the first start.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Protocol

from storage.errors import first_line
from storage.records import MessageRecord

log = logging.getLogger(__name__)


class Orphans(Protocol):
    """Where answers whose writer died are found (met by storage.repos.conversations.ConversationRepo)."""

    async def orphaned_answers(self, live: Collection[str], limit: int = 50) -> list[MessageRecord]:
        """Answers still being written by a process not in `live`, oldest first."""
        ...


class Resuming(Protocol):
    """What takes an orphan over (met by bot.chat.manager.ConversationManager)."""

    async def resume(self, answer: MessageRecord) -> bool:
        """Answer the orphan's question again here; False when this process cannot or another took it first."""
        ...

    async def close_orphan(self, answer: MessageRecord) -> bool:
        """Close the orphan without answering; False when another took it first."""
        ...


def _utcnow() -> datetime:
    return datetime.now(UTC)


class TurnRecovery:
    """Sweeps for orphaned answers every `every` seconds (and once at start) and has them taken over."""

    def __init__(
        self,
        orphans: Orphans,
        resuming: Resuming,
        live: Callable[[], Collection[str]],
        *,
        every: float = 5.0,
        max_age: float = 600.0,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self._orphans = orphans
        self._resuming = resuming
        self._live = live
        self._every = every
        self._max_age = timedelta(seconds=max_age)
        self._clock = clock
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Sweep now (what a previous process left), then every period."""
        self._task = asyncio.create_task(self._run(), name="turn-recovery")

    async def stop(self) -> None:
        """Stop sweeping (turns already taken over run on, held by the manager)."""
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            try:
                await self.sweep()
            except Exception as exc:  # the driver's errors too (a database away): sweep again next time
                log.warning("recovery=sweep_failed reason=%s", first_line(exc))
            await asyncio.sleep(self._every)

    async def sweep(self) -> int:
        """Take over every orphan this process can; how many it took."""
        taken = 0
        oldest = self._clock() - self._max_age
        for answer in await self._orphans.orphaned_answers(self._live()):
            if answer.created_at < oldest:
                if await self._resuming.close_orphan(answer):
                    log.info("recovery=closed answer=%s from=%s", answer.id, answer.instance or "-")
                continue
            if await self._resuming.resume(answer):
                taken += 1
        return taken
