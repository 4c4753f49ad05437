"""The bot's own pacing of Telegram calls: per chat, per group, per bot, and the penalty after a 429."""

from __future__ import annotations

from adapters.telegram.pacing import Pacer


class _Time:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


async def _times(pacer: Pacer, clock: _Time, chats: list[int]) -> list[float]:
    stamps = []
    for chat in chats:
        await pacer.acquire(chat)
        stamps.append(round(clock.now, 3))
    return stamps


async def test_a_chat_gets_one_call_a_second_and_other_chats_are_not_held_up() -> None:
    clock = _Time()
    pacer = Pacer(clock=clock, sleep=clock.sleep)
    assert await _times(pacer, clock, [1, 2, 1, 1]) == [0.0, 0.0, 1.0, 2.0]


async def test_a_group_gets_twenty_calls_a_minute() -> None:
    clock = _Time()
    pacer = Pacer(clock=clock, sleep=clock.sleep)
    stamps = await _times(pacer, clock, [-100] * 21)
    assert stamps[19] == 19.0
    assert stamps[20] == 60.0


async def test_the_bot_makes_at_most_thirty_calls_a_second() -> None:
    clock = _Time()
    pacer = Pacer(clock=clock, sleep=clock.sleep)
    stamps = await _times(pacer, clock, list(range(1, 32)))
    assert stamps[29] == 0.0
    assert stamps[30] == 1.0


async def test_after_a_429_the_chat_waits_out_retry_after_and_typing_holds_back() -> None:
    clock = _Time()
    pacer = Pacer(clock=clock, sleep=clock.sleep)
    await pacer.acquire(5)
    pacer.rate_limited(5, 7.0, bot_wide=False)
    assert pacer.penalised(5)
    assert not pacer.penalised(6)
    await pacer.acquire(5)
    assert clock.now == 7.0
    assert not pacer.penalised(5)


async def test_two_processes_of_one_bot_make_thirty_calls_a_second_between_them() -> None:
    clock = _Time()
    pacers = [Pacer(clock=clock, sleep=clock.sleep, share=lambda: 0.5) for _ in range(2)]
    calls: list[float] = []
    for _ in range(16):  # the two take turns, each as fast as its pacer lets it
        for pacer in pacers:
            await pacer.acquire(len(calls) + 1)
            calls.append(clock.now)
    # Each makes 15 a second: together 30 in the first second, the 31st and 32nd wait for the next.
    assert calls[29] == 0.0
    assert calls[30:] == [1.0, 1.0]


async def test_a_chat_keeps_its_own_rate_whatever_the_number_of_processes() -> None:
    clock = _Time()
    pacer = Pacer(clock=clock, sleep=clock.sleep, share=lambda: 1 / 3)
    assert await _times(pacer, clock, [1, 1, 1]) == [0.0, 1.0, 2.0]


async def test_chats_seen_once_are_forgotten_once_their_windows_are_empty_and_live_limits_are_kept() -> None:
    clock = _Time()
    pacer = Pacer(clock=clock, sleep=clock.sleep)
    for chat in range(1, 1001):
        await pacer.acquire(chat)
    pacer.rate_limited(5000, retry_after=300, bot_wide=False)
    assert pacer.chats_held == 1000
    clock.now += 61  # every window (the longest is a group's minute) has emptied
    await pacer.acquire(-100)  # a group, now
    assert pacer.chats_held == 1
    assert pacer.penalised(5000)  # a 429 still running is not forgotten
    clock.now += 0.5
    second_ends = round(clock.now + 0.5, 3)
    assert await _times(pacer, clock, [-100]) == [second_ends]  # the group's own window is kept
