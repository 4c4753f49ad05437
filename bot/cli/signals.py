"""The signals that end a foreground command: SIGINT from a terminal, SIGTERM from a supervisor."""

from __future__ import annotations

import asyncio
import signal


def stop_requested() -> asyncio.Event:
    """An event set on SIGINT or SIGTERM, its handlers installed before this returns.

    Installed before anything starts, so a signal sent the moment a command says it is ready (or while it is
    still starting) stops it cleanly instead of killing it.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    return stop
