"""The signals that end a foreground command: SIGINT from a terminal, SIGTERM from a supervisor."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Callable

log = logging.getLogger(__name__)


def stop_requested(exit_now: Callable[[int], object] = os._exit) -> asyncio.Event:
    """An event set on SIGINT or SIGTERM, its handlers installed before this returns; a second signal exits at once
    (`exit_now`), for the operator who will not wait for the answers in flight.

    Installed before anything starts, so a signal sent the moment a command says it is ready (or while it is
    still starting) stops it cleanly instead of killing it.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        if not stop.is_set():
            stop.set()
            return
        log.warning("serve=exiting_now signal=%s", signal.Signals(signum).name)
        for handler in logging.getLogger().handlers:  # os._exit flushes nothing
            handler.flush()
        exit_now(128 + signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal, signum)
    return stop
