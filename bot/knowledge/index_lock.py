"""The reindex's hold on the search index: one reindex at a time, and nothing written to the index meanwhile.

A reindex fills a new generation and switches to it at the end; anything written to the live one in between
would be gone after the switch. So the reindex holds a lease in SQL (every ragbot process shares it), the job
runner starts no ingestion while it is held, and the chat's direct index writes (/faq add, deletes) are refused
with a message until it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

from bot.errors import UserFacingError
from bot.words import messages
from storage.records import LeaseRecord
from storage.repos.leases import LeaseRepo

log = logging.getLogger(__name__)

REINDEX = "reindex"


class IndexLock:
    """The `reindex` lease, seen from one process."""

    def __init__(self, leases: LeaseRepo, owner: str, *, lease: float = 60.0, poll: float = 5.0) -> None:
        self._leases = leases
        self._owner = owner
        self._lease = timedelta(seconds=lease)
        self._poll = poll

    async def holder(self) -> LeaseRecord | None:
        """The process rebuilding the index now, if any."""
        return await self._leases.holder(REINDEX, now=datetime.now(UTC))

    async def ensure_writable(self) -> None:
        """Raise a UserFacingError while a reindex runs: a write now would be lost at its switch."""
        if await self.holder() is not None:
            raise UserFacingError(messages.index_rebuilding(), in_language=messages.index_rebuilding)

    async def wait_writable(self) -> None:
        """Return once no reindex runs (at once when none does)."""
        said = False
        while (held := await self.holder()) is not None:
            if not said:
                log.info("jobs=waiting_for_reindex owner=%s until=%s", held.owner, held.expires_at.isoformat())
                said = True
            await asyncio.sleep(self._poll)

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        """Hold the lease for a reindex, renewed while it runs; a UserFacingError when another holds it."""
        now = datetime.now(UTC)
        if not await self._leases.acquire(REINDEX, self._owner, now=now, until=now + self._lease):
            held = await self.holder()
            raise UserFacingError(messages.reindex_running(held.owner if held else "another process"))
        renewal = asyncio.create_task(self._renew(), name="reindex-lease")
        try:
            yield
        finally:
            renewal.cancel()
            await asyncio.gather(renewal, return_exceptions=True)
            await asyncio.shield(self._leases.release(REINDEX, self._owner))

    async def _renew(self) -> None:
        # Three renewals per lease: two may be missed (a slow database) before another process could take it.
        while True:
            await asyncio.sleep(self._lease.total_seconds() / 3)
            await self._leases.renew(REINDEX, self._owner, until=datetime.now(UTC) + self._lease)
