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
from collections.abc import AsyncIterator
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

    async def release(self, name: str, owner: str) -> None:
        """Let go of `name` if `owner` holds it."""
        ...

    async def lapse(self, name: str, owner: str) -> None:
        """Let go of `name` if `owner` holds it, keeping its row for the next taker."""
        ...

    async def live(self, prefix: str) -> list[LeaseRecord]:
        """Every live lease whose name starts with `prefix`."""
        ...


class Presence:
    """This process among those on the database: its lease renewed every third of a period, and who else is alive.

    `live()` answers from the last beat, so asking costs nothing; a beat that fails (the database away) keeps the
    last view rather than guessing, and this process counts itself alive either way.
    """

    def __init__(self, leases: Leases, instance_id: str, *, period: float = 15.0) -> None:
        self.instance_id = instance_id
        self.period = period
        self._leases = leases
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
        """Renew this process's lease (taking it anew after an outage) and read who is alive."""
        if not await self._leases.renew(self._name, self.instance_id, lease=self.period):
            await self._leases.acquire(self._name, self.instance_id, lease=self.period)
        owners = {lease.owner for lease in await self._leases.live(INSTANCE_PREFIX)}
        changed = owners | {self.instance_id}
        if changed != self._live:
            log.info("instances=%d live=%s", len(changed), ",".join(sorted(changed)))
        self._live = frozenset(changed)

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
    """One turn at a time per conversation across every process: a lease per conversation, renewed while held.

    Within a process the turn gate already keeps a conversation's order; this is the same promise between
    processes. A waiter polls, backing off to `poll_max` seconds: a conversation rarely has two questions on two
    processes at once, and a holder that dies frees it within one period.
    """

    def __init__(
        self, leases: Leases, instance_id: str, *, period: float = 15.0, poll: float = 0.05, poll_max: float = 0.5
    ) -> None:
        self._leases = leases
        self._instance_id = instance_id
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
        renewer = asyncio.create_task(self._renew(name, owner), name="conversation-lease")
        try:
            yield
        finally:
            renewer.cancel()
            with suppress(asyncio.CancelledError):
                await renewer
            try:
                await self._leases.lapse(name, owner)
            except Exception as exc:  # the turn is over whatever happens here: the lease lapses on its own
                log.warning("conversation=lease_release_failed name=%s reason=%s", name, first_line(exc))

    async def _renew(self, name: str, owner: str) -> None:
        while True:
            await asyncio.sleep(self._period / 3)
            try:
                if not await self._leases.renew(name, owner, lease=self._period):
                    log.warning("conversation=lease_lost name=%s", name)
                    return
            except Exception as exc:  # the driver's errors too: the turn goes on, and the next renewal may work
                log.warning("conversation=lease_renew_failed name=%s reason=%s", name, first_line(exc))
