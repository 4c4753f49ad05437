"""Telegram is told "received" only once an update's question is stored.

A webhook's 200 and a poll's next offset both tell Telegram an update arrived, and it never sends that update again;
a process killed between that and storing the question would lose it. PTB hands every update, polled or posted,
to the application through its update queue, so the queue's `put` is where both wait: until the adapter settles the
update (its question stored, or nothing to store), or at most `within` seconds, so a slow store delays Telegram
without ever losing the update to a timeout.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress

from telegram import Update

log = logging.getLogger(__name__)


class ReceiptQueue(asyncio.Queue[object]):
    """PTB's update queue, whose `put` of an update returns once the adapter settled it (or `within` seconds)."""

    def __init__(self, *, within: float) -> None:
        super().__init__()
        self._within = within
        self._waiting: dict[int, asyncio.Event] = {}

    async def put(self, item: object) -> None:
        """Queue `item`; an update is waited for until settled."""
        if not isinstance(item, Update):
            await super().put(item)  # PTB's own signals (stop)
            return
        settled = self._waiting.setdefault(item.update_id, asyncio.Event())
        try:
            await super().put(item)
            with suppress(TimeoutError):
                await asyncio.wait_for(settled.wait(), self._within)
            if not settled.is_set():
                log.warning("telegram=receipt_unsettled update=%s within=%.0fs", item.update_id, self._within)
        finally:
            if self._waiting.get(item.update_id) is settled:
                del self._waiting[item.update_id]

    def settle(self, update_id: int) -> None:
        """The update needs nothing more before Telegram may hear it arrived (stored, or nothing to store)."""
        if (settled := self._waiting.get(update_id)) is not None:
            settled.set()
