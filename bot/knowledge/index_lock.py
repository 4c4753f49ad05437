"""The reindex's hold on the search index: one reindex at a time, and nothing written to the index meanwhile.

A reindex fills a new generation and switches to it at the end; anything written to the live one in between
would be gone after the switch. So the reindex holds a lease in SQL (every ragbot process shares it), the job
runner starts no ingestion while it is held, and the chat's direct index writes (/faq add, deletes) are refused
with a message until it ends.

Once the lease is lost (renewals failed until it must have lapsed, or another process took it), those writes go
on against the live generation; so the reindex is stopped then, before its switch, and the switch itself first
confirms the lease in SQL. The lapse is reckoned by this process's monotonic clock from the last renewal sent,
which never runs behind the database's expiry: the reindex stops before another process can take the lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from bot.errors import UserFacingError
from bot.words import messages
from storage.records import LeaseRecord
from storage.repos.leases import LeaseRepo

log = logging.getLogger(__name__)

REINDEX = "reindex"
Wait = Callable[[float], Awaitable[None]]
# The first retry of a failed renewal, doubled on each failure up to the usual interval.
_FIRST_RETRY = 1.0


class IndexLockLost(UserFacingError):
    """The reindex's lease lapsed or was taken: it must not switch generations."""

    def __init__(self) -> None:
        super().__init__(messages.reindex_lease_lost())


class HeldIndex:
    """A reindex's hold on the index while it lasts: `confirm()` before switching generations."""

    def __init__(self, lock: IndexLock, deadline: float) -> None:
        self._lock = lock
        self.deadline = deadline
        self.lost = False

    async def confirm(self) -> None:
        """Renew the lease now; raise IndexLockLost unless this process still holds it (by the database's clock).

        Called right before the switch, which then has a whole lease to finish in.
        """
        if self.lost or not await self._lock.renew(self):
            self.lost = True
            raise IndexLockLost


class IndexLock:
    """The `reindex` lease, seen from one process."""

    def __init__(
        self,
        leases: LeaseRepo,
        owner: str,
        *,
        lease: float = 60.0,
        poll: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        wait: Wait = asyncio.sleep,
    ) -> None:
        self._leases = leases
        self._owner = owner
        self._lease = lease
        self._poll = poll
        # This process's own monotonic clock and sleep, for when the lease must have lapsed and for retries.
        self._clock = clock
        self._wait = wait

    async def holder(self) -> LeaseRecord | None:
        """The process rebuilding the index now, if any."""
        return await self._leases.holder(REINDEX)

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
    async def hold(self) -> AsyncIterator[HeldIndex]:
        """Hold the lease for a reindex, renewed while it runs; a UserFacingError when another holds it.

        Should the lease be lost meanwhile, the body is cancelled and IndexLockLost raised in its place.
        """
        sent = self._clock()
        if not await self._leases.acquire(REINDEX, self._owner, lease=self._lease):
            holder = await self.holder()
            raise UserFacingError(messages.reindex_running(holder.owner if holder else "another process"))
        held = HeldIndex(self, sent + self._lease)
        body = asyncio.current_task()
        assert body is not None
        renewal = asyncio.create_task(self._keep(held, body), name="reindex-lease")
        try:
            yield held
        except asyncio.CancelledError:
            # Cancelled by _keep alone (not by a Ctrl-C as well): the reindex stops with the reason instead.
            if held.lost and body.uncancel() == 0:
                raise IndexLockLost from None
            raise
        finally:
            renewal.cancel()
            await asyncio.gather(renewal, return_exceptions=True)
            await asyncio.shield(self._release())

    async def renew(self, held: HeldIndex) -> bool:
        """Extend the lease by a whole term; False when this process no longer holds it. Raises what SQL raises."""
        sent = self._clock()
        if not await self._leases.renew(REINDEX, self._owner, lease=self._lease):
            return False
        held.deadline = max(held.deadline, sent + self._lease)
        return True

    async def _keep(self, held: HeldIndex, body: asyncio.Task[object]) -> None:
        """Renew three times a lease, retrying failures until the lease must have lapsed; then stop the body."""
        interval = self._lease / 3
        pause = interval
        while True:
            await self._wait(max(0.0, min(pause, held.deadline - self._clock())))
            if self._clock() >= held.deadline:
                log.error("reindex=lease_lapsed owner=%s: the renewals failed for a whole lease", self._owner)
                break
            try:
                async with asyncio.timeout(interval):
                    renewed = await self.renew(held)
            except Exception:
                # The database out of reach for a moment must not end the renewals: retry, sooner at first.
                log.warning("reindex=lease_renewal_failed owner=%s", self._owner, exc_info=True)
                pause = _FIRST_RETRY if pause == interval else min(interval, pause * 2)
                continue
            if not renewed:
                log.error("reindex=lease_taken owner=%s", self._owner)
                break
            pause = interval
        held.lost = True
        body.cancel()

    async def _release(self) -> None:
        try:
            await self._leases.release(REINDEX, self._owner)
        except Exception:
            # Left to expire: another reindex waits out one lease term at most.
            log.warning("reindex=lease_release_failed owner=%s", self._owner, exc_info=True)
