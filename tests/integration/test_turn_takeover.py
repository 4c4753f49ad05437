"""Several ragbot processes on one database: no stored question is lost with the process that was answering it,
one conversation's turns run one at a time across processes, and a /stop reaches the process writing the answer.

Each "process" here is a ConversationManager with its own instance name over the same real database (SQLite and
PostgreSQL); a process dies as a killed one does, mid-answer, its answer left `streaming` under its name. The
multi-process end-to-end drill (real `ragbot serve` processes killed -9 behind haproxy) is in tests/e2e.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.app.settings import Settings
from bot.chat.instances import ConversationLocks, HeldLeases, Presence
from bot.chat.manager import ConversationManager
from bot.chat.recovery import TurnRecovery
from bot.cli.doctor import database_finding
from bot.ports import ReplyTarget
from bot.types import ConversationKey
from bot.words import messages
from storage.db import Database
from storage.notify import Notifications
from storage.records import LeaseRecord, MessageRecord
from storage.repos.leases import LeaseRepo
from tests.integration.test_conversation_manager import DM, _manager, _message, _stored
from tests.support.chat import RecordingTarget, ScriptedAnswerer
from tests.support.chat_world import ChatWorld


def _process(world: ChatWorld, name: str, live: set[str], **parts: object) -> ConversationManager:
    """A manager as the process `name` runs it, seeing `live` as the processes alive."""
    manager = _manager(world)
    manager._parts = replace(manager._parts, instance=name, live=lambda: frozenset(live), **parts)  # type: ignore[arg-type]
    return manager


def _resuming_into(manager: ConversationManager, targets: list[RecordingTarget]) -> None:
    async def target(key: ConversationKey, question: MessageRecord) -> ReplyTarget:
        made = RecordingTarget()
        targets.append(made)
        return made

    manager.resume_on(DM.platform, target)


async def _resumed(manager: ConversationManager) -> None:
    """Wait for the turns `manager` took over to end."""
    resumed = [task for task in manager._notices if task.get_name() == "turn-resumed"]
    await asyncio.wait_for(asyncio.gather(*resumed), 10)


async def _die_mid_answer(world: ChatWorld, name: str, question: str = "Which VPN client?") -> None:
    """The process `name` takes the question and dies while its answer streams (its task cancelled, nothing after)."""
    world.answerer = ScriptedAnswerer(["Half an ", "|", "answer"])
    dying = _process(world, name, {name})

    async def nothing_after(*args: object) -> None:
        """A killed process does not get to end its answer the way a cancelled turn does (a shutdown's cut)."""

    dying._cut = nothing_after  # type: ignore[method-assign]
    turn = asyncio.create_task(dying.handle(_message(question, message_id=f"q-{name}"), RecordingTarget()))
    await asyncio.wait_for(world.answerer.holding.wait(), 10)
    turn.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await turn
    world.answerer = ScriptedAnswerer()


async def test_an_answer_whose_process_died_is_written_again_by_another_in_a_message_that_says_so(
    world: ChatWorld,
) -> None:
    await _die_mid_answer(world, "a")
    (question, answer) = await _stored(world, DM)
    assert (answer.status, answer.instance) == ("streaming", "a")
    survivor, targets = _process(world, "b", {"b"}), []
    _resuming_into(survivor, targets)
    assert await TurnRecovery(world.conversations, survivor, lambda: {"b"}).sweep() == 1
    await _resumed(survivor)
    (stream,) = targets[0].streams
    assert stream.finished is not None
    assert stream.finished.text == "The VPN client."
    assert messages.resumed("en") in stream.finished.notice
    assert world.answerer.asked[0][0] == "Which VPN client?"
    stored = await _stored(world, DM)
    assert [(m.role, m.status) for m in stored] == [("user", "done"), ("assistant", "done")]
    assert (stored[1].id, stored[1].text, stored[1].instance) == (answer.id, "The VPN client.", "b")
    assert stored[0].id == question.id


async def test_two_processes_sweeping_at_once_take_an_orphan_over_once(world: ChatWorld) -> None:
    await _die_mid_answer(world, "a")
    targets: list[RecordingTarget] = []
    b, c = _process(world, "b", {"b", "c"}), _process(world, "c", {"b", "c"})
    _resuming_into(b, targets)
    _resuming_into(c, targets)
    taken = await asyncio.gather(
        TurnRecovery(world.conversations, b, lambda: {"b", "c"}).sweep(),
        TurnRecovery(world.conversations, c, lambda: {"b", "c"}).sweep(),
    )
    assert sorted(taken) == [0, 1]
    await _resumed(b)
    await _resumed(c)
    assert sum(len(target.streams) for target in targets) == 1  # a target may be made, but one answer is written
    assert len(world.answerer.asked) == 1


async def test_the_answers_of_a_live_process_are_left_to_it(world: ChatWorld) -> None:
    await _die_mid_answer(world, "a")
    b = _process(world, "b", {"a", "b"})
    _resuming_into(b, [])
    assert await TurnRecovery(world.conversations, b, lambda: {"a", "b"}).sweep() == 0
    assert world.answerer.asked == []


async def test_an_orphan_older_than_the_limit_is_closed_without_a_late_answer(world: ChatWorld) -> None:
    await _die_mid_answer(world, "a")
    b = _process(world, "b", {"b"})
    targets: list[RecordingTarget] = []
    _resuming_into(b, targets)
    later = datetime.now(UTC) + timedelta(minutes=11)
    assert await TurnRecovery(world.conversations, b, lambda: {"b"}, max_age=600, clock=lambda: later).sweep() == 0
    _, answer = await _stored(world, DM)
    assert (answer.status, answer.meta["outcome"]) == ("failed", "interrupted")
    assert targets == []
    assert world.answerer.asked == []


async def test_an_orphan_of_a_platform_this_process_does_not_serve_is_left_for_one_that_does(
    world: ChatWorld,
) -> None:
    await _die_mid_answer(world, "a")
    web_only = _process(world, "b", {"b"})  # no way to reply on the "test" platform
    assert await TurnRecovery(world.conversations, web_only, lambda: {"b"}).sweep() == 0
    _, answer = await _stored(world, DM)
    assert (answer.status, answer.instance) == ("streaming", "a")


async def test_a_question_waiting_for_its_turn_is_already_stored_under_its_process(world: ChatWorld) -> None:
    world.answerer = ScriptedAnswerer(["First ", "|", "answer"])
    manager = _process(world, "a", {"a"})
    first = asyncio.create_task(manager.handle(_message("one?", message_id="m1"), RecordingTarget()))
    await asyncio.wait_for(world.answerer.holding.wait(), 10)
    waiting = RecordingTarget()
    second = asyncio.create_task(manager.handle(_message("two?", message_id="m2"), waiting))
    await asyncio.wait_for(waiting.typed.wait(), 10)

    async def stored_texts() -> list[tuple[str, str, str]]:
        return [(m.role, m.status, m.instance) for m in await _stored(world, DM)]

    for _ in range(200):  # the second is stored before it waits: a bounded look, no sleep
        if len(await stored_texts()) == 4:
            break
        await asyncio.sleep(0)
    assert await stored_texts() == [
        ("user", "done", ""),
        ("assistant", "streaming", "a"),
        ("user", "done", ""),
        ("assistant", "streaming", "a"),
    ]
    world.answerer.release.set()
    await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert [q for q, _ in world.answerer.asked] == ["one?", "two?"]


async def test_processes_see_each_other_and_one_that_leaves(db: Database) -> None:
    leases = LeaseRepo(db)
    a, b = Presence(leases, "a", period=30), Presence(leases, "b", period=30)
    await a.start()
    await b.start()
    try:
        await a.beat()
        assert a.live() == b.live() == {"a", "b"}
        assert a.share() == 0.5
        await b.stop()
        await a.beat()
        assert a.live() == {"a"}
        assert a.share() == 1.0
    finally:
        await a.stop()
        await b.stop()


class _CountingLeases(LeaseRepo):
    """The real leases, telling when a conversation lease was refused (someone else holds it)."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.refused = asyncio.Event()

    async def acquire(self, name: str, owner: str, *, lease: float) -> bool:
        taken = await super().acquire(name, owner, lease=lease)
        if not taken:
            self.refused.set()
        return taken


async def test_one_conversation_is_held_by_one_process_at_a_time(db: Database) -> None:
    leases = _CountingLeases(db)
    a = ConversationLocks(leases, "a", HeldLeases(), period=30)
    b = ConversationLocks(leases, "b", HeldLeases(), period=30)
    order: list[str] = []
    async with a.hold("c1"):
        order.append("a in")
        second = asyncio.create_task(_enter(b, "c1", order))
        await asyncio.wait_for(leases.refused.wait(), 10)
        async with b.hold("c2"):  # another conversation is not held up
            order.append("b in c2")
        order.append("a out")
    await asyncio.wait_for(second, 10)
    assert order == ["a in", "b in c2", "a out", "b in"]


async def _enter(locks: ConversationLocks, conversation_id: str, order: list[str]) -> None:
    async with locks.hold(conversation_id):
        order.append("b in")


async def test_a_conversation_held_by_a_process_that_died_is_taken_once_its_lease_lapses(db: Database) -> None:
    leases = LeaseRepo(db)
    assert await leases.acquire("conversation:c1", "dead/1", lease=1.0)  # and never renewed
    locks = ConversationLocks(leases, "b", HeldLeases(), period=30, poll_max=0.2)
    async with asyncio.timeout(10), locks.hold("c1"):
        holder = await leases.holder("conversation:c1")
        assert isinstance(holder, LeaseRecord)
        assert holder.owner.startswith("b/")


# One process serves a SQLite store, so a stop never has to travel there: PostgreSQL only.
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_stop_reaches_the_process_writing_the_answer(world: ChatWorld, db: Database) -> None:
    bus = Notifications(db, "ragbot_stop_test")
    world.answerer = ScriptedAnswerer(["Partial ", "|", "never shown"])
    writer = _process(world, "a", {"a", "b"}, stops=bus)
    other = _process(world, "b", {"a", "b"}, stops=bus)
    await bus.start(writer.stop_here)
    try:
        answering = RecordingTarget()
        turn = asyncio.create_task(writer.handle(_message("long question?"), answering))
        await asyncio.wait_for(world.answerer.holding.wait(), 10)
        stopper = RecordingTarget()
        await other.handle(_message("/stop"), stopper)
        assert stopper.replies() == [messages.stopping("en")]
        result = await asyncio.wait_for(turn, 10)
        assert result is not None
        assert result.answer.outcome == "stopped"
    finally:
        world.answerer.release.set()
        await bus.stop()


async def test_doctor_names_the_processes_serving_the_database(db: Database, tmp_path: Path) -> None:
    settings = Settings(_env_file=None, RAGBOT_DATA_DIR=tmp_path, DATABASE_URL=db.config.url)
    presence = Presence(LeaseRepo(db), "host-a:41:c0ffee", period=30)
    await presence.start()
    try:
        finding = await database_finding(settings)
        assert finding.verdict == "ok"
        assert "`ragbot serve` alive on it: host-a:41:c0ffee" in finding.detail
    finally:
        await presence.stop()
    finding = await database_finding(settings)
    assert "no `ragbot serve` on it" in finding.detail


async def test_many_leases_are_renewed_in_one_statement_except_those_lapsed_or_held_by_another(db: Database) -> None:
    leases = LeaseRepo(db)
    assert await leases.acquire("conversation:mine", "a/1", lease=30)
    assert await leases.acquire("conversation:taken", "b/1", lease=30)
    assert await leases.acquire("conversation:lapsed", "a/2", lease=-1)
    held = {"conversation:mine": "a/1", "conversation:taken": "a/3", "conversation:lapsed": "a/2"}
    assert await leases.renew_each(held, lease=60) == {"conversation:mine"}
    assert await leases.holder("conversation:lapsed") is None
    taken = await leases.holder("conversation:taken")
    assert taken is not None
    assert taken.owner == "b/1"
    assert await leases.renew_each({}, lease=60) == set()
