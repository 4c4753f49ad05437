"""The per-workspace Slack budget: progress calls take only spare tokens, finals wait in line, 429s hold all."""

from __future__ import annotations

import pytest

from adapters.slack.budget import Budget, Pacer, Rate


class Clock:
    """A clock the test moves; sleeping moves it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _budget(clock: Clock, per_minute: float = 60, burst: float = 5) -> Budget:
    return Budget(Rate(per_minute=per_minute, burst=burst), clock=clock, sleep=clock.sleep)


def test_progress_takes_only_tokens_beyond_the_reserve_for_finals() -> None:
    clock = Clock()
    budget = _budget(clock)
    taken = [budget.try_take() == 0.0 for _ in range(5)]
    assert taken == [True, True, True, False, False]  # 5 in the bucket, 2 kept for final deliveries
    assert budget.try_take() == pytest.approx(1.0)  # one second at 60 a minute brings a spare back


async def test_finals_use_the_reserve_and_then_wait_for_the_refill() -> None:
    clock = Clock()
    budget = _budget(clock)
    for _ in range(3):
        assert budget.try_take() == 0.0
    await budget.take()
    await budget.take()
    assert clock.now == 0.0
    await budget.take()
    assert clock.now == pytest.approx(1.0)


async def test_a_429_holds_back_progress_and_finals_until_retry_after() -> None:
    clock = Clock()
    budget = _budget(clock)
    budget.penalise(30.0)
    assert budget.try_take() == pytest.approx(30.0)
    await budget.take()
    assert clock.now >= 30.0


def test_never_more_calls_in_a_minute_than_the_rate_and_burst_allow() -> None:
    clock = Clock()
    budget = _budget(clock, per_minute=45, burst=5)
    calls = 0
    while clock.now < 60.0:
        if budget.try_take() == 0.0:
            calls += 1
        clock.now += 0.1
    assert calls <= 45 + 5


def test_budgets_are_per_workspace_and_method() -> None:
    clock = Clock()
    pacer = Pacer({"chat.update": Rate(per_minute=60, burst=3)}, clock=clock, sleep=clock.sleep)
    assert pacer.budget("T1", "chat.update").try_take() == 0.0
    assert pacer.budget("T1", "chat.update").try_take() > 0.0
    assert pacer.budget("T2", "chat.update").try_take() == 0.0
    assert pacer.budget("T1", "chat.postMessage") is not pacer.budget("T1", "chat.update")


async def test_three_processes_spend_one_workspace_budget_between_them() -> None:
    clock = Clock()
    live = [3]  # three processes of the app alive, then one left alone
    budgets = [
        Budget(Rate(per_minute=45, burst=6), clock=clock, sleep=clock.sleep, share=lambda: 1 / live[0])
        for _ in range(3)
    ]
    finals = 0
    while clock.now < 60.0:
        for budget in budgets:  # every process delivers finals as fast as its budget lets it
            budget._refill()
            if budget._tokens >= 1.0:
                budget._tokens -= 1.0
                finals += 1
        clock.now += 0.1
    assert 45 <= finals <= 45 + 6  # one budget (its rate and burst) for the three, not three
    live[0] = 1
    alone = budgets[0]
    clock.now += 60.0
    taken = [alone.try_take() == 0.0 for _ in range(6)]
    assert taken == [True, True, True, True, False, False]  # the whole burst again, 2 kept for finals


async def test_budgets_unused_for_two_minutes_are_forgotten_and_one_in_use_or_penalised_is_kept() -> None:
    clock = Clock()
    pacer = Pacer({"chat.postMessage": Rate(per_minute=60, burst=3)}, clock=clock, sleep=clock.sleep)
    for channel in range(500):
        pacer.budget("T1", "chat.postMessage", f"C{channel}").try_take()
    pacer.budget("T1", "chat.postMessage", "C-late").penalise(600)
    assert pacer.held == 501
    clock.now += 121
    busy = pacer.budget("T1", "chat.postMessage", "C-busy")
    assert busy.try_take() == 0.0
    assert pacer.held == 2  # the one just used and the one still under a 429
    assert pacer.budget("T1", "chat.postMessage", "C-late").try_take() > 0.0
