"""One status message edited in place as work moves (an ingestion's stage and progress), then its outcome."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from bot.errors import DeliveryFailed, MarkupRejected, MessageGone, PlatformError, PlatformRateLimited
from bot.ports import ReplyTarget
from bot.types import MessageRef

log = logging.getLogger(__name__)

_FINAL_ATTEMPTS = 5


class StatusMessage:
    """Progress edits no faster than the target allows (skipped, not queued, when too fast or rate limited);
    the final text is always delivered, waiting out 429s."""

    def __init__(
        self,
        target: ReplyTarget,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._target = target
        self._clock = clock
        self._sleep = sleep
        self._ref: MessageRef | None = None
        self._shown = ""
        self._last = float("-inf")
        self._lock = asyncio.Lock()
        self._dead = False

    async def update(self, text: str) -> None:
        """Show `text` if the target's edit interval allows it now; otherwise it is superseded by the next."""
        async with self._lock:
            if self._dead or text == self._shown:
                return
            if self._ref is not None and self._clock() - self._last < self._target.limits.min_edit_interval:
                return
            try:
                await self._show(text)
            except PlatformRateLimited:
                return  # progress is a hint; the final text waits the limit out
            except PlatformError as exc:
                log.warning("status=update_failed reason=%s", exc)

    async def final(self, text: str) -> None:
        """Show the outcome, retrying through rate limits; a message deleted meanwhile is sent anew."""
        async with self._lock:
            for _attempt in range(_FINAL_ATTEMPTS):
                if self._dead or text == self._shown:
                    return
                wait = self._ref and self._target.limits.min_edit_interval - (self._clock() - self._last)
                if wait and wait > 0:
                    await self._sleep(wait)
                try:
                    await self._show(text)
                    return
                except PlatformRateLimited as exc:
                    await self._sleep(exc.retry_after)
            log.error("status=undelivered")

    async def _show(self, text: str) -> None:
        try:
            await self._send_or_edit(text, markup=True)
        except MarkupRejected:
            await self._send_or_edit(text, markup=False)
        except MessageGone:
            self._ref = None  # someone deleted the status message: say it again in a new one
            await self._send_or_edit(text, markup=True)
        except DeliveryFailed:
            self._dead = True
            raise
        self._shown = text
        self._last = self._clock()

    async def _send_or_edit(self, text: str, *, markup: bool) -> None:
        body = self._target.render(text) if markup else text
        if self._ref is None:
            self._ref = await self._target.send(body, markup=markup)
        else:
            await self._target.edit(self._ref, body, markup=markup)
