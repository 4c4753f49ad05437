"""The ragbot processes on one database: each announces itself with a lease, and one conversation's turns take a
lease too, so several processes keep its order and each knows which of the others are alive.

Everything here is a row in the leases table, reckoned by the database's clock: a process that dies simply stops
renewing, and within one lease period the others see it gone (its answers are then finished by another: recovery).
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from typing import Final, Protocol

from storage.errors import first_line
from storage.records import LeaseRecord

log = logging.getLogger(__name__)

INSTANCE_PREFIX: Final = "instance:"
CONVERSATION_PREFIX: Final = "conversation:"


class Leases(Protocol):
    """Named leases by the database's clock (met by storage.repos.leases.LeaseRepo)."""

    async def acquire(self, name: str, owner: str, *, lease: float) -> bool:
        """Hold `name` for `lease` seconds; False while another owner's lease is live."""
        ...

    async def renew(self, name: str, owner: str, *, lease: float) -> bool:
        """Extend a live hold; False when it lapsed or another took it."""
        ...

    async def renew_each(self, held: Mapping[str, str], *, lease: float) -> set[str]:
        """Extend every live hold in `held` (name to owner) at once; the names renewed."""
        ...

    async def release(self, name: str, owner: str) -> None:
        """Let go of `name` if `owner` holds it."""
        ...

    async def lapse(self, name: str, owner: str) -> None:
        """Let go of `name` if `owner` holds it, keeping its row for the next taker."""
        ...

    async def live(self, prefix: str) -> list[LeaseRecord]:
        """Every live lease whose name starts with `prefix`."""
        ...


class HeldLeases:
    """The conversation leases this process holds (name to owner), renewed together by its presence's beats.

    Turns add and drop them on the serving loop while the beats may read them on a thread of their own: a lock keeps
    every read whole.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, str] = {}

    def add(self, name: str, owner: str) -> None:
        """Hold `name` as `owner` until dropped."""
        with self._lock:
            self._held[name] = owner

    def drop(self, name: str, owner: str) -> None:
        """Stop renewing `name` if `owner` still holds it."""
        with self._lock:
            if self._held.get(name) == owner:
                del self._held[name]

    def snapshot(self) -> dict[str, str]:
        """Every lease held now."""
        with self._lock:
            return dict(self._held)


class LoopPulse:
    """Whether the serving event loop still takes steps: it stamps the time every `every` seconds, and a presence
    beating on another thread stops vouching for it once no stamp came for `limit` seconds, so a stuck process is
    let go like a dead one and its answers are finished by another."""

    def __init__(self, *, limit: float, every: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self._every = every
        self._clock = clock
        self._last = clock()

    async def run(self) -> None:
        """Stamp the time until cancelled (run it on the loop it speaks for)."""
        while True:
            self._last = self._clock()
            await asyncio.sleep(self._every)

    def silence(self) -> float:
        """Seconds since the loop's last stamp."""
        return self._clock() - self._last

    def stalled(self) -> bool:
        """Whether the loop has been silent longer than the limit."""
        return self.silence() > self.limit


class Presence:
    """This process among those on the database: its lease renewed every third of a period, and who else is alive.

    `live()` answers from the last beat, so asking costs nothing; a beat that fails (the database away) keeps the
    last view rather than guessing, and this process counts itself alive either way. Given the conversation leases
    it holds, each beat renews them too, in one statement; given its loop's pulse, it stops beating while that loop
    is stalled past the pulse's limit.
    """

    def __init__(
        self,
        leases: Leases,
        instance_id: str,
        *,
        period: float = 15.0,
        held: HeldLeases | None = None,
        pulse: LoopPulse | None = None,
    ) -> None:
        self.instance_id = instance_id
        self.period = period
        self._leases = leases
        self._held = held
        self._pulse = pulse
        self._live: frozenset[str] = frozenset({instance_id})
        self._task: asyncio.Task[None] | None = None

    @property
    def _name(self) -> str:
        return INSTANCE_PREFIX + self.instance_id

    async def start(self) -> None:
        """Announce this process and learn the others, then keep both fresh."""
        await self.beat()
        self._task = asyncio.create_task(self._run(), name="presence")

    async def stop(self) -> None:
        """Stop renewing and say goodbye, so the others need not wait a period to know."""
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task
        with suppress(Exception):  # leaving: the lease lapses on its own when the database is away
            await self._leases.release(self._name, self.instance_id)

    async def beat(self) -> None:
        """Renew this process's lease (taking it anew after an outage) and those it holds, and read who is alive."""
        if self._pulse is not None and self._pulse.stalled():
            log.warning("instances=loop_stalled silent_seconds=%.1f", self._pulse.silence())
            return
        if not await self._leases.renew(self._name, self.instance_id, lease=self.period):
            await self._leases.acquire(self._name, self.instance_id, lease=self.period)
        if self._held is not None:
            await self._renew_held(self._held)
        owners = {lease.owner for lease in await self._leases.live(INSTANCE_PREFIX)}
        changed = owners | {self.instance_id}
        if changed != self._live:
            log.info("instances=%d live=%s", len(changed), ",".join(sorted(changed)))
        self._live = frozenset(changed)

    async def _renew_held(self, held: HeldLeases) -> None:
        leases = held.snapshot()
        renewed = await self._leases.renew_each(leases, lease=self.period)
        still_held = held.snapshot()
        for name in leases.keys() - renewed:
            if still_held.get(name) == leases[name]:  # not let go meanwhile: it lapsed, and another may take it
                log.warning("conversation=lease_lost name=%s", name)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.period / 3)
            try:
                await self.beat()
            except Exception as exc:  # the driver's errors too (a database away): beat again, never stop beating
                log.warning("instances=beat_failed reason=%s", first_line(exc))

    def live(self) -> frozenset[str]:
        """The processes alive at the last beat, this one included."""
        return self._live

    def share(self) -> float:
        """This process's share of a limit all of them share (a platform's rate budget): one over the live count."""
        return 1.0 / len(self._live)


def new_instance_id() -> str:
    """A process's name among the others: where it runs (host, pid) and a random tag against a reused pid; at most
    55 characters, so it fits every column and lease name that carries it whole (64)."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(3)}"


class ConversationLocks:
    """One turn at a time per conversation across every process: a lease per conversation, held while the turn runs
    and renewed by this process's presence beats (`held`).

    Within a process the turn gate already keeps a conversation's order; this is the same promise between
    processes. A waiter polls, backing off to `poll_max` seconds: a conversation rarely has two questions on two
    processes at once, and a holder that dies frees it within one period.
    """

    def __init__(
        self,
        leases: Leases,
        instance_id: str,
        held: HeldLeases,
        *,
        period: float = 15.0,
        poll: float = 0.05,
        poll_max: float = 0.5,
    ) -> None:
        self._leases = leases
        self._instance_id = instance_id
        self._held = held
        self._period = period
        self._poll = poll
        self._poll_max = poll_max

    @asynccontextmanager
    async def hold(self, conversation_id: str) -> AsyncIterator[None]:
        """Hold the conversation for the body (waiting while another process holds it)."""
        name = CONVERSATION_PREFIX + conversation_id
        owner = f"{self._instance_id}/{secrets.token_hex(4)}"
        wait = self._poll
        while not await self._leases.acquire(name, owner, lease=self._period):
            await asyncio.sleep(wait)
            wait = min(wait * 2, self._poll_max)
        self._held.add(name, owner)
        try:
            yield
        finally:
            self._held.drop(name, owner)
            try:
                await self._leases.lapse(name, owner)
            except Exception as exc:  # the turn is over whatever happens here: the lease lapses on its own
                log.warning("conversation=lease_release_failed name=%s reason=%s", name, first_line(exc))
