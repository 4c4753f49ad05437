"""The turn gate: one turn at a time per conversation, and the queue behind it heard by one watcher."""

from __future__ import annotations

import asyncio

from bot.chat.limits import RateLimit, RateLimiter, TurnGate
from tests.support.chat import wait_until


class _Watchers:
    """Makes queue watchers and records what each heard."""

    def __init__(self) -> None:
        self.heard: list[list[int]] = []
        self.changed = asyncio.Event()

    def make(self) -> _Heard:
        self.heard.append([])
        return _Heard(self, self.heard[-1])


class _Heard:
    def __init__(self, watchers: _Watchers, counts: list[int]) -> None:
        self._watchers = watchers
        self._counts = counts

    def queued(self, count: int) -> None:
        self._counts.append(count)
        self._watchers.changed.set()


class _Turns:
    """Turns through one gate; the turn named "hold" waits for `release` inside its slot."""

    def __init__(self, gate: TurnGate, watchers: _Watchers) -> None:
        self.gate = gate
        self.watchers = watchers
        self.started: list[str] = []
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def run(
        self, name: str, conversation: str = "c1", places: _Watchers | None = None, chat: str = "", cap: int = 0
    ) -> None:
        async with self.gate.turn(
            conversation, self.watchers.make, places.make if places else None, chat=chat, chat_cap=cap
        ):
            self.started.append(name)
            if name == "hold":
                self.holding.set()
                await asyncio.wait_for(self.release.wait(), 10)


async def test_turns_waiting_behind_a_running_one_are_heard_by_one_watcher_down_to_none() -> None:
    turns = _Turns(TurnGate(10), _Watchers())
    first = asyncio.create_task(turns.run("hold"))
    await asyncio.wait_for(turns.holding.wait(), 10)
    rest = [asyncio.create_task(turns.run(name)) for name in ("b", "c", "d")]
    await wait_until(lambda: turns.watchers.heard == [[1, 2, 3]], turns.watchers.changed)
    assert turns.gate.waiting("c1") == 4
    turns.release.set()
    await asyncio.wait_for(asyncio.gather(first, *rest), 10)
    assert turns.watchers.heard == [[1, 2, 3, 2, 1, 0]]
    assert turns.started == ["hold", "b", "c", "d"]
    assert turns.gate.waiting("c1") == 0


async def test_a_turn_that_never_waits_makes_no_watcher() -> None:
    turns = _Turns(TurnGate(10), _Watchers())
    await asyncio.wait_for(turns.run("a"), 10)
    await asyncio.wait_for(turns.run("b"), 10)
    assert turns.watchers.heard == []


async def test_a_waiting_turn_given_up_leaves_the_queue_and_a_later_wait_gets_a_new_watcher() -> None:
    turns = _Turns(TurnGate(10), _Watchers())
    first = asyncio.create_task(turns.run("hold"))
    await asyncio.wait_for(turns.holding.wait(), 10)
    gone = asyncio.create_task(turns.run("gone"))
    await wait_until(lambda: turns.watchers.heard == [[1]], turns.watchers.changed)
    gone.cancel()
    await wait_until(lambda: turns.watchers.heard == [[1, 0]], turns.watchers.changed)
    later = asyncio.create_task(turns.run("later"))
    await wait_until(lambda: turns.watchers.heard == [[1, 0], [1]], turns.watchers.changed)
    turns.release.set()
    await asyncio.wait_for(asyncio.gather(first, later), 10)
    assert turns.watchers.heard == [[1, 0], [1, 0]]
    assert turns.started == ["hold", "later"]
    assert gone.cancelled()


async def test_another_conversation_does_not_queue_behind_a_running_turn() -> None:
    turns = _Turns(TurnGate(10), _Watchers())
    first = asyncio.create_task(turns.run("hold"))
    await asyncio.wait_for(turns.holding.wait(), 10)
    await asyncio.wait_for(turns.run("other", conversation="c2"), 10)
    assert turns.started == ["hold", "other"]
    assert turns.watchers.heard == []
    turns.release.set()
    await asyncio.wait_for(first, 10)


async def test_turns_waiting_for_a_free_slot_start_in_order_each_told_its_place() -> None:
    places = _Watchers()
    turns = _Turns(TurnGate(1), _Watchers())
    first = asyncio.create_task(turns.run("hold", conversation="c0"))
    await asyncio.wait_for(turns.holding.wait(), 10)
    rest = [asyncio.create_task(turns.run(name, conversation=name, places=places)) for name in ("b", "c", "d")]
    await wait_until(lambda: places.heard == [[1], [2], [3]], places.changed)
    rest[1].cancel()  # "c" gives up: "d" moves up
    await wait_until(lambda: places.heard == [[1], [2, 0], [3, 2]], places.changed)
    turns.release.set()
    await asyncio.wait_for(asyncio.gather(first, rest[0], rest[2]), 10)
    assert turns.started == ["hold", "b", "d"]
    assert places.heard == [[1, 0], [2, 0], [3, 2, 1, 0]]


async def test_a_chats_conversations_run_side_by_side_up_to_its_cap_and_the_next_is_told_its_place() -> None:
    places = _Watchers()
    turns = _Turns(TurnGate(10), _Watchers())
    first = asyncio.create_task(turns.run("hold", conversation="g:a", chat="g", cap=2))
    await asyncio.wait_for(turns.holding.wait(), 10)
    await asyncio.wait_for(turns.run("b", conversation="g:b", chat="g", cap=2), 10)  # a second runs beside it
    turns.holding.clear()
    second = asyncio.create_task(turns.run("hold", conversation="g:c", chat="g", cap=2))
    await asyncio.wait_for(turns.holding.wait(), 10)
    third = asyncio.create_task(turns.run("d", conversation="g:d", places=places, chat="g", cap=2))
    await wait_until(lambda: places.heard == [[1]], places.changed)
    await asyncio.wait_for(turns.run("other", conversation="h:a", chat="h", cap=2), 10)  # another chat is not held
    assert turns.started == ["hold", "b", "hold", "other"]
    turns.release.set()
    await asyncio.wait_for(asyncio.gather(first, second, third), 10)
    assert turns.started[-1] == "d"
    assert places.heard == [[1, 0]]
    # Nothing is left behind for the chat: a later turn there runs at once.
    await asyncio.wait_for(turns.run("e", conversation="g:e", chat="g", cap=1), 10)


async def test_a_slot_handed_to_a_turn_cancelled_meanwhile_passes_to_the_next() -> None:
    turns = _Turns(TurnGate(1), _Watchers())
    first = asyncio.create_task(turns.run("hold", conversation="c0"))
    await asyncio.wait_for(turns.holding.wait(), 10)
    places = _Watchers()
    waiting = asyncio.create_task(turns.run("b", conversation="b", places=places))
    await wait_until(lambda: places.heard == [[1]], places.changed)

    class CancelsB(_Heard):
        def queued(self, count: int) -> None:
            super().queued(count)
            if count == 1:  # "hold" just handed its slot to "b", which has not run yet: cancel it now
                waiting.cancel()

    places.heard.append([])
    after = asyncio.create_task(_run_with(turns, "c", CancelsB(places, places.heard[-1])))
    await wait_until(lambda: places.heard[1] == [2], places.changed)
    turns.release.set()
    await asyncio.wait_for(asyncio.gather(first, after), 10)
    assert turns.started == ["hold", "c"]
    assert waiting.cancelled()


async def _run_with(turns: _Turns, name: str, heard: _Heard) -> None:
    async with turns.gate.turn(name, turns.watchers.make, lambda: heard):
        turns.started.append(name)


def test_a_person_over_the_limit_is_told_once_until_the_window_lets_them_in_again() -> None:
    now = [0.0]
    limiter = RateLimiter(RateLimit(count=1, window=60.0), clock=lambda: now[0])
    assert limiter.allow("alice")
    refusals = []
    for _ in range(5):
        assert not limiter.allow("alice")
        refusals.append(limiter.first_refusal("alice"))
    assert refusals == [True, False, False, False, False]
    now[0] = 61.0
    assert limiter.allow("alice")
    assert not limiter.allow("alice")
    assert limiter.first_refusal("alice")
