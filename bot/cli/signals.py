"""Waiting for the signal that ends a foreground command (SIGINT from a terminal, SIGTERM from a supervisor)."""

from __future__ import annotations

import asyncio
import signal


async def wait_for_stop_signal() -> None:
    """Return once SIGINT or SIGTERM arrives."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
