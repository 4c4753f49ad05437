"""Load limits for turns: a per-user rate limit and a gate that runs one turn per conversation at a time."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most `count` messages per `window` seconds from one person."""

    count: int = 10
    window: float = 60.0


class RateLimiter:
    """A sliding-window limit per key; time is injected so it is tested without waiting."""

    def __init__(self, limit: RateLimit, clock: Callable[[], float] = time.monotonic) -> None:
        self._limit = limit
        self._clock = clock
        self._seen: dict[str, deque[float]] = {}
        # Per key, until when the person was told they are over the limit: a flood is answered once, not per message.
        self._told: dict[str, float] = {}

    def allow(self, key: str) -> bool:
        """Count one message for `key`; False when it is over the limit (and then it is not counted)."""
        now = self._clock()
        seen = self._seen.setdefault(key, deque())
        while seen and seen[0] <= now - self._limit.window:
            seen.popleft()
        if len(seen) >= self._limit.count:
            return False
        seen.append(now)
        if len(self._seen) > 10_000:  # forget idle people so the map cannot grow without bound
            self._seen = {k: v for k, v in self._seen.items() if v and v[-1] > now - self._limit.window}
            self._told = {k: until for k, until in self._told.items() if until > now}
        return True

    def first_refusal(self, key: str) -> bool:
        """Whether a refused message is the first since `key` went over the limit: the one worth a reply.

        A flood of messages over the limit gets one "please wait", so the flood cannot spend the chat's own send
        budget (Telegram: one message a second) on refusals."""
        now = self._clock()
        if self._told.get(key, float("-inf")) > now:
            return False
        self._told[key] = now + self.retry_after(key)
        return True

    def retry_after(self, key: str) -> float:
        """Seconds until `key` may send again (0 when it may now)."""
        seen = self._seen.get(key)
        if not seen or len(seen) < self._limit.count:
            return 0.0
        return max(0.0, seen[0] + self._limit.window - self._clock())


class QueueWatcher(Protocol):
    """Hears how many turns of one conversation wait behind the one running, down to 0 (none waits any more)."""

    def queued(self, count: int) -> None:
        """The number of waiting turns changed to `count`."""
        ...


@dataclass(slots=True)
class _Line:
    """One conversation's turns: the lock the running one holds, how many hold or wait for it, who hears the queue."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    entered: int = 0
    queued: int = 0
    watcher: QueueWatcher | None = None


class _Slots:
    """At most `size` holders at once; the rest wait first come, first served, each told how many are ahead of it."""

    def __init__(self, size: int) -> None:
        self._free = size
        self._waiting: deque[tuple[asyncio.Future[None], QueueWatcher | None]] = deque()

    async def acquire(self, watcher: Callable[[], QueueWatcher] | None = None) -> None:
        """Take a slot, waiting in line when none is free; `watcher` (made only when this waits) hears the place."""
        if self._free and not self._waiting:
            self._free -= 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heard = watcher() if watcher is not None else None
        self._waiting.append((turn, heard))
        if heard is not None:
            heard.queued(len(self._waiting))
        try:
            await turn
        except BaseException:
            if turn.done() and not turn.cancelled():
                self.release()  # handed a slot just as this waiter was cancelled: pass it on
            else:
                place = next(i for i, entry in enumerate(self._waiting) if entry[0] is turn)
                del self._waiting[place]
                self._tell_places(since=place)
            raise
        finally:
            if heard is not None:
                heard.queued(0)

    def release(self) -> None:
        """Give the slot to the first in line, else free it."""
        while self._waiting:
            turn, _ = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                self._tell_places()
                return
        self._free += 1

    def _tell_places(self, since: int = 0) -> None:
        """Tell the waiters from index `since` on their new place (those before it did not move)."""
        for index in range(since, len(self._waiting)):
            heard = self._waiting[index][1]
            if heard is not None:
                heard.queued(index + 1)


class TurnGate:
    """One turn at a time per conversation (the next waits its turn, in order), a cap per chat, and a global cap.

    Each conversation's queue has at most one watcher, made by the first turn that had to wait: it hears every
    change of the number waiting, so one notice per conversation can follow the queue instead of one per turn.
    A turn that waits for a slot of its chat or a global one has a watcher of its own, told its place in that line.
    The chat's cap bounds a chat of many conversations (a group keyed by reply chain): its answers share the chat's
    send budget, so beyond a few at once each only grows slower, and the chat would hold every global slot.
    """

    def __init__(self, max_turns: int) -> None:
        self._global = _Slots(max_turns)
        self._lines: dict[str, _Line] = {}
        # Per chat, its slots and how many turns use them (the entry goes when none does).
        self._chats: dict[str, tuple[_Slots, int]] = {}

    def waiting(self, conversation_id: str) -> int:
        """How many turns of this conversation are queued or running."""
        line = self._lines.get(conversation_id)
        return line.entered if line is not None else 0

    @asynccontextmanager
    async def turn(
        self,
        conversation_id: str,
        watcher: Callable[[], QueueWatcher] | None = None,
        place_watcher: Callable[[], QueueWatcher] | None = None,
        *,
        in_line: Callable[[], None] | None = None,
        chat: str = "",
        chat_cap: int = 0,
    ) -> AsyncIterator[None]:
        """Hold the conversation's slot (and one of its chat's, and a global one) for the body; a turn that waits is
        counted in its queue.

        `watcher` makes the conversation's queue watcher when this turn is the first to wait and none hears it yet;
        `place_watcher` makes this turn's own watcher when it waits for a chat's or a global slot, told its place.
        `in_line` is called once this turn's place in the conversation's line is fixed (nothing awaited between).
        `chat` names the chat the turn counts against, at most `chat_cap` of whose turns run at once (0: no cap).
        """
        line = self._lines.setdefault(conversation_id, _Line())
        chat_slots = self._enter_chat(chat, chat_cap)
        # Counted, not read off the lock: a turn just woken holds no lock yet, and a newcomer still waits behind it.
        waits = line.entered > 0
        line.entered += 1
        try:
            if waits:
                self._queue(line, 1, watcher)
            try:
                if in_line is not None:
                    in_line()  # the lock's FIFO place is taken below without a suspension in between
                await self._acquire(line.lock, chat_slots, _once(place_watcher))
            finally:
                if waits:
                    self._queue(line, -1, None)
            try:
                yield
            finally:
                self._global.release()
                if chat_slots is not None:
                    chat_slots.release()
                line.lock.release()
        finally:
            line.entered -= 1
            if not line.entered:
                del self._lines[conversation_id]
            self._leave_chat(chat)

    def _enter_chat(self, chat: str, cap: int) -> _Slots | None:
        if not chat or cap <= 0:
            return None
        slots, users = self._chats.get(chat) or (_Slots(cap), 0)
        self._chats[chat] = (slots, users + 1)
        return slots

    def _leave_chat(self, chat: str) -> None:
        entry = self._chats.get(chat)
        if entry is None:
            return
        slots, users = entry
        if users == 1:
            del self._chats[chat]
        else:
            self._chats[chat] = (slots, users - 1)

    def _queue(self, line: _Line, change: int, watcher: Callable[[], QueueWatcher] | None) -> None:
        line.queued += change
        if line.watcher is None and change > 0 and watcher is not None:
            line.watcher = watcher()
        if line.watcher is not None:
            line.watcher.queued(line.queued)
            if not line.queued:
                line.watcher = None

    async def _acquire(
        self, lock: asyncio.Lock, chat: _Slots | None, place_watcher: Callable[[], QueueWatcher] | None
    ) -> None:
        await lock.acquire()
        try:
            if chat is not None:
                await chat.acquire(place_watcher)
            try:
                await self._global.acquire(place_watcher)
            except BaseException:
                if chat is not None:
                    chat.release()
                raise
        except BaseException:
            lock.release()
            raise


def _once(make: Callable[[], QueueWatcher] | None) -> Callable[[], QueueWatcher] | None:
    """`make`, called at most once: a turn waiting first for its chat, then globally, has one watcher told both."""
    if make is None:
        return None
    made: list[QueueWatcher] = []

    def watcher() -> QueueWatcher:
        if not made:
            made.append(make())
        return made[0]

    return watcher


class Arrivals:
    """Keeps a conversation's arrival order through the step before its turn gate (storing the question).

    A message holds its conversation's arrival lock from the moment it arrives until it has its place in the turn
    gate's line, so a later message whose store was quicker cannot take the earlier one's place.
    """

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def arrive(self, conversation_id: str) -> AsyncIterator[Callable[[], None]]:
        """Hold the conversation's arrival for the body; the yielded call lets the next message in (at most once)."""
        lock, users = self._locks.get(conversation_id, (asyncio.Lock(), 0))
        self._locks[conversation_id] = (lock, users + 1)
        released = False

        def let_next_in() -> None:
            nonlocal released
            if not released:
                released = True
                lock.release()

        try:
            await lock.acquire()
            try:
                yield let_next_in
            finally:
                let_next_in()
        finally:
            lock, users = self._locks[conversation_id]
            if users == 1:
                del self._locks[conversation_id]
            else:
                self._locks[conversation_id] = (lock, users - 1)
