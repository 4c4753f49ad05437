"""The signals that end `ragbot serve`: the first asks it to stop cleanly, a second exits at once."""

from __future__ import annotations

import asyncio
import os
import signal

from bot.cli.signals import stop_requested


async def test_the_first_signal_asks_to_stop_and_a_second_exits_at_once() -> None:
    exits: list[int] = []
    exited = asyncio.Event()

    def exit_now(code: int) -> None:
        exits.append(code)
        exited.set()

    stop = stop_requested(exit_now)
    loop = asyncio.get_running_loop()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(stop.wait(), 5)
        assert exits == []
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(exited.wait(), 5)
        assert exits == [128 + signal.SIGTERM]
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
