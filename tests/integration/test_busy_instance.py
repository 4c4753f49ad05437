"""A process whose event loop is slowed by a burst stays alive to the others, and one stuck for good is let go.

The serving loop is stalled here as a burst stalls it (a step that does not yield), while another thread, with its
own connection, watches the leases the way the other processes see them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from bot.app.heartbeat import beating_apart
from bot.chat.instances import ConversationLocks, HeldLeases
from storage.db import Database, DatabaseConfig
from storage.repos.leases import LeaseRepo

ONE_PROCESS = "host-a:7:c0ffee"
INSTANCE = "instance:" + ONE_PROCESS
CONVERSATION = "conversation:c1"

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)


def _stall_watching(url: str, watch: Callable[[LeaseRepo], object]) -> object:
    """Block this thread's event loop while `watch` reads the leases from another thread (with its own loop)."""

    async def watching() -> object:
        db = Database(DatabaseConfig(url=url, pool_size=1))
        await db.open(migrate=False)
        try:
            return await watch(LeaseRepo(db))  # type: ignore[misc]
        finally:
            await db.close()

    with ThreadPoolExecutor(1) as other_thread:
        return other_thread.submit(asyncio.run, watching()).result(timeout=30)


async def _live(leases: LeaseRepo, *names: str) -> list[bool]:
    return [await leases.holder(name) is not None for name in names]


async def _held_again_within(leases: LeaseRepo, name: str, *, seconds: float) -> bool:
    """Whether `name` is held again within `seconds`: the other processes' view is a row, with no event to await."""
    for _ in range(int(seconds * 10)):
        if await leases.holder(name) is not None:
            return True
        await asyncio.sleep(0.1)
    return False


async def test_a_loop_stalled_for_several_lease_periods_keeps_its_process_and_conversation_leases(db: Database) -> None:
    held = HeldLeases()
    async with beating_apart(db.config, ONE_PROCESS, held, period=1.0, stall_limit=20.0):
        locks = ConversationLocks(LeaseRepo(db), ONE_PROCESS, held, period=1.0)
        async with locks.hold("c1"):

            async def watch_three_periods(leases: LeaseRepo) -> list[list[bool]]:
                seen = []
                until = time.monotonic() + 3.5
                while time.monotonic() < until:
                    seen.append(await _live(leases, INSTANCE, CONVERSATION))
                    await asyncio.sleep(0.2)
                return seen

            seen = _stall_watching(db.config.url, watch_three_periods)
    assert isinstance(seen, list)
    assert len(seen) >= 10
    assert all(alive == [True, True] for alive in seen), seen


async def test_a_loop_stuck_past_the_limit_is_let_go_and_comes_back_when_it_moves_again(db: Database) -> None:
    held = HeldLeases()
    async with beating_apart(db.config, ONE_PROCESS, held, period=1.0, stall_limit=1.5) as presence:

        async def watch_until_gone(leases: LeaseRepo) -> float | None:
            started = time.monotonic()
            while time.monotonic() - started < 10:
                if not (await _live(leases, INSTANCE))[0]:
                    return time.monotonic() - started
                await asyncio.sleep(0.1)
            return None

        gone_after = _stall_watching(db.config.url, watch_until_gone)
        assert isinstance(gone_after, float), "the stuck process was still vouched for after 10 s"
        assert await _held_again_within(LeaseRepo(db), INSTANCE, seconds=10)
        assert presence.live() == {ONE_PROCESS}
