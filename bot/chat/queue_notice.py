"""The one message telling a conversation that its questions wait their turn, edited as they start."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from bot.errors import PlatformError
from bot.ports import ReplyTarget
from bot.reply.status import StatusMessage
from bot.words import messages

log = logging.getLogger(__name__)


class QueueNotice:
    """A queue watcher (bot.chat.limits.QueueWatcher): one message, edited as the queue moves.

    By default it follows a conversation's own queue; given `waiting` and `done` texts, one question's place in the
    line for a free answer slot.

    Nothing is shown unless a question has waited `delay` seconds; then one message in `target` says how many
    wait, is edited as each starts, and says it is done when the last one starts. It works in its own task (kept in
    `tasks`), so no turn waits for the notice's sends and edits.
    """

    def __init__(
        self,
        target: ReplyTarget,
        lang: str,
        delay: float,
        tasks: set[asyncio.Task[None]],
        *,
        waiting: Callable[[int, str], str] = messages.queued,
        done: Callable[[str], str] = messages.queue_done,
    ) -> None:
        self._waiting = waiting
        self._done = done
        self._target = target
        self._lang = lang
        self._delay = delay
        self._tasks = tasks
        self._count = 0
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def queued(self, count: int) -> None:
        """The number of questions waiting is now `count` (0: the last one started)."""
        self._count = count
        self._changed.set()
        if self._task is None:
            self._task = asyncio.create_task(self._follow(), name="queue-notice")
            self._tasks.add(self._task)
            self._task.add_done_callback(self._tasks.discard)

    async def _follow(self) -> None:
        if not await self._still_waiting_after_delay():
            return
        status = StatusMessage(self._target)
        try:
            while self._count:
                self._changed.clear()
                # Each count is delivered (waiting out the edit interval and 429s); whatever it is by then is next.
                await status.final(self._waiting(self._count, self._lang))
                if self._count:
                    await self._changed.wait()
            await status.final(self._done(self._lang))
        except PlatformError as exc:
            # A notice is a courtesy: the questions are answered all the same.
            log.warning("queue_notice=undelivered reason=%s", exc)

    async def _still_waiting_after_delay(self) -> bool:
        try:
            async with asyncio.timeout(self._delay):
                while self._count:
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            return True
        return False
