"""The turn boundary over plain stand-ins of its parts: what a chat reads, and what the person is shown."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.types import ConversationKey, MessageRef, UserRef
from bot.words import messages
from storage.records import MessageRecord
from tests.support.chat import RecordingTarget, ScriptedAnswerer, wait_until
from tests.unit.bot.chat.stand_ins import (
    ADMIN,
    ALICE,
    DM,
    Conversations,
    KnowledgeNames,
    Parts,
    manager,
    message,
)

WEB = ConversationKey("web", "", "s1")


async def test_a_default_knowledge_base_created_later_is_read_on_the_next_turn() -> None:
    parts = Parts()
    chat = manager(parts, clock=lambda: 0.0, default_kbs=("handbook",))
    await chat.handle(message("Which VPN client?"), RecordingTarget())
    kb = parts.knowledge.add("handbook")  # wherever it was created, the config epoch moved
    await chat.handle(message("Which VPN client?"), RecordingTarget())
    assert [kb_ids for _, kb_ids in parts.answerer.asked] == [(), (kb.id,)]
    assert await chat.readable_kb_ids(DM) == [kb.id]


async def test_names_are_resolved_once_while_nothing_changes() -> None:
    parts = Parts(knowledge=KnowledgeNames("handbook"))
    chat = manager(parts, default_kbs=("handbook",))
    for _ in range(3):
        await chat.handle(message("Which VPN client?"), RecordingTarget())
    assert parts.knowledge.lookups == 1


@pytest.mark.parametrize(
    ("bound", "allowed", "key", "missing"),
    [
        ((), {}, DM, ["handbook"]),
        (("kb-docs",), {}, DM, []),  # a chat bound to a knowledge base does not read the defaults
        ((), {"web": ("docs",)}, WEB, []),  # nor what its platform may not read
        ((), {"web": ("handbook", "docs")}, WEB, ["handbook"]),
    ],
)
async def test_a_chats_missing_defaults_are_those_it_would_read(
    bound: tuple[str, ...], allowed: dict[str, tuple[str, ...]], key: ConversationKey, missing: list[str]
) -> None:
    parts = Parts(knowledge=KnowledgeNames("docs"))
    parts.settings.bound[(key.platform, key.workspace, key.chat)] = list(bound)
    chat = manager(parts, default_kbs=("handbook", "docs"), allowed_kbs=allowed)
    assert await chat.missing_kb_names(key) == missing


@pytest.mark.parametrize(("user", "admin"), [(ALICE, False), (ADMIN, True)])
async def test_an_answer_in_a_chat_whose_default_is_missing_names_it_and_the_way_out(
    user: UserRef, admin: bool
) -> None:
    parts = Parts()
    chat, target = manager(parts, default_kbs=("handbook",)), RecordingTarget()
    await chat.handle(message("Which VPN client?", user=user), target)
    (stream,) = target.streams
    assert stream.finished is not None
    assert stream.finished.notice == messages.no_kb_bound(["handbook"], "en", admin=admin)
    assert ("/kb create handbook" if admin else "ask an admin") in stream.finished.notice.lower()


async def test_an_answer_in_a_chat_that_reads_its_knowledge_base_has_no_such_notice() -> None:
    parts = Parts(knowledge=KnowledgeNames("handbook"))
    chat, target = manager(parts, default_kbs=("handbook",)), RecordingTarget()
    await chat.handle(message("Which VPN client?"), target)
    (stream,) = target.streams
    assert stream.finished is not None
    assert stream.finished.notice == ""


def _notice(target: RecordingTarget) -> list[str]:
    """Every text of the queue notice in this target: the message sent, then each edit."""
    return target.sent + [text for _, text in target.edits]


async def test_a_burst_of_questions_in_one_chat_gets_one_queue_notice_edited_as_they_start_then_done() -> None:
    parts = Parts(knowledge=KnowledgeNames("handbook"), answerer=ScriptedAnswerer(["first ", "|", "answer"]))
    chat = manager(parts, default_kbs=("handbook",), queue_notice_after=0.0)
    targets = [RecordingTarget() for _ in range(4)]
    first = asyncio.create_task(chat.handle(message("one?"), targets[0]))
    await asyncio.wait_for(parts.answerer.holding.wait(), 10)
    burst = [
        asyncio.create_task(chat.handle(message(question), target))
        for question, target in zip(("two?", "three?", "four?"), targets[1:], strict=True)
    ]
    notice = targets[1]  # the first question to wait shows the chat's notice
    await wait_until(lambda: _notice(notice)[-1:] == [messages.queued(3, "en")], notice.changed)
    parts.answerer.release.set()
    await asyncio.wait_for(asyncio.gather(first, *burst), 10)
    await wait_until(lambda: _notice(notice)[-1:] == [messages.queue_done("en")], notice.changed)
    assert [len(target.sent) for target in targets] == [0, 1, 0, 0]  # one notice for the whole chat
    after_burst = _notice(notice)[_notice(notice).index(messages.queued(3, "en")) + 1 :]
    moving = [messages.queued(2, "en"), messages.queued(1, "en"), messages.queue_done("en")]
    assert after_burst == [text for text in moving if text in after_burst]  # only forward, never scrambled
    assert [question for question, _ in parts.answerer.asked] == ["one?", "two?", "three?", "four?"]
    assert all(target.streams[-1].finished is not None for target in targets)


async def test_a_question_that_waits_less_than_the_notice_delay_sees_no_notice() -> None:
    parts = Parts(knowledge=KnowledgeNames("handbook"), answerer=ScriptedAnswerer(["first ", "|", "answer"]))
    chat = manager(parts, default_kbs=("handbook",), queue_notice_after=60.0)
    waiting = RecordingTarget()
    first = asyncio.create_task(chat.handle(message("one?"), RecordingTarget()))
    await asyncio.wait_for(parts.answerer.holding.wait(), 10)
    second = asyncio.create_task(chat.handle(message("two?"), waiting))
    parts.answerer.release.set()
    await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert _notice(waiting) == []
    assert [question for question, _ in parts.answerer.asked] == ["one?", "two?"]


async def test_a_question_waiting_for_a_free_answer_slot_is_told_its_place_then_that_it_started() -> None:
    parts = Parts(knowledge=KnowledgeNames("handbook"), answerer=ScriptedAnswerer(["first ", "|", "answer"]))
    chat = manager(parts, default_kbs=("handbook",), max_turns=1, line_notice_after=0.0)
    busy = asyncio.create_task(chat.handle(message("one?"), RecordingTarget()))
    await asyncio.wait_for(parts.answerer.holding.wait(), 10)
    other = ConversationKey("test", "team", "dm-bob")
    waiting = RecordingTarget()
    second = asyncio.create_task(chat.handle(message("two?", key=other), waiting))
    await wait_until(lambda: _notice(waiting) == [messages.busy_place(1, "en")], waiting.changed)
    parts.answerer.release.set()
    await asyncio.wait_for(asyncio.gather(busy, second), 10)
    await wait_until(lambda: _notice(waiting)[-1:] == [messages.busy_done("en")], waiting.changed)
    assert [question for question, _ in parts.answerer.asked] == ["one?", "two?"]


async def test_a_chats_conversations_beyond_its_platforms_cap_wait_in_line_told_their_place() -> None:
    parts = Parts(knowledge=KnowledgeNames("handbook"), answerer=ScriptedAnswerer(["first ", "|", "answer"]))
    chat = manager(parts, default_kbs=("handbook",), max_chat_turns={"test": 1}, line_notice_after=0.0)
    busy = asyncio.create_task(
        chat.handle(message("one?", key=ConversationKey("test", "team", "group", "a")), RecordingTarget())
    )
    await asyncio.wait_for(parts.answerer.holding.wait(), 10)
    waiting = RecordingTarget()
    second = asyncio.create_task(
        chat.handle(message("two?", key=ConversationKey("test", "team", "group", "b")), waiting)
    )
    await wait_until(lambda: _notice(waiting) == [messages.busy_place(1, "en")], waiting.changed)
    parts.answerer.release.set()
    await asyncio.wait_for(asyncio.gather(busy, second), 10)
    assert [question for question, _ in parts.answerer.asked] == ["one?", "two?"]


class _StuckNoticeTarget(RecordingTarget):
    """A chat whose queue notice never gets through (its send hangs, as behind a long 429)."""

    def __init__(self) -> None:
        super().__init__()
        self.notice_tried = asyncio.Event()

    async def send(self, text: str, *, markup: bool = True) -> MessageRef:
        self.notice_tried.set()
        await asyncio.Event().wait()  # never returns; the turn must not wait for it
        raise AssertionError("unreachable")


async def test_a_queue_notice_that_cannot_be_sent_does_not_hold_up_the_question_it_is_about() -> None:
    parts = Parts(knowledge=KnowledgeNames("handbook"), answerer=ScriptedAnswerer(["first ", "|", "answer"]))
    chat = manager(parts, default_kbs=("handbook",), queue_notice_after=0.0)
    first = asyncio.create_task(chat.handle(message("one?"), RecordingTarget()))
    await asyncio.wait_for(parts.answerer.holding.wait(), 10)
    stuck = _StuckNoticeTarget()
    second = asyncio.create_task(chat.handle(message("two?"), stuck))
    await asyncio.wait_for(stuck.notice_tried.wait(), 10)
    parts.answerer.release.set()
    await asyncio.wait_for(asyncio.gather(first, second), 10)
    (stream,) = stuck.streams
    assert stream.finished is not None
    assert stream.finished.text == "first answer"


class _SlowStore(Conversations):
    """Stores that wait for `release`, counting how many run at once (as a burst would meet a busy database)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.storing = 0
        self.most_at_once = 0
        self.changed = asyncio.Event()

    async def open_turn(self, *args: Any, **kwargs: Any) -> tuple[MessageRecord, MessageRecord]:
        self.storing += 1
        self.most_at_once = max(self.most_at_once, self.storing)
        self.changed.set()
        try:
            await self.release.wait()
            return await super().open_turn(*args, **kwargs)
        finally:
            self.storing -= 1


async def test_a_burst_of_arrivals_is_stored_a_bounded_number_at_a_time_and_every_question_is_answered() -> None:
    store = _SlowStore()
    parts = Parts(conversations=store, knowledge=KnowledgeNames("handbook"))
    chat = manager(parts, default_kbs=("handbook",), max_arrivals=3)
    targets = [RecordingTarget() for _ in range(10)]
    keys = [ConversationKey("test", "team", f"dm-{n}") for n in range(10)]
    burst = [asyncio.create_task(chat.handle(message("VPN?", key=k), t)) for k, t in zip(keys, targets, strict=True)]
    await wait_until(lambda: store.storing >= 3, store.changed)
    for target in targets:  # every one of them arrived (the typing is shown before the store)
        await asyncio.wait_for(target.typed.wait(), 10)
    for _ in range(20):  # let any store not held back by the bound begin
        await asyncio.sleep(0)
    assert store.storing == 3
    store.release.set()
    await asyncio.wait_for(asyncio.gather(*burst), 10)
    assert store.most_at_once == 3
    assert all(len(target.replies()) == 1 for target in targets)


async def test_an_answer_past_its_deadline_keeps_what_was_written_with_a_note_and_frees_its_conversation() -> None:
    answerer = ScriptedAnswerer(["Half an ", "|", "answer"])
    answerer.deadline = 0.2  # the model goes silent after its first piece, past the deadline
    parts = Parts(knowledge=KnowledgeNames("handbook"), answerer=answerer)
    chat = manager(parts, default_kbs=("handbook",))
    target = RecordingTarget()
    result = await asyncio.wait_for(chat.handle(message("Which VPN client?"), target), 10)
    assert result is not None
    assert result.answer.outcome == "timed_out"
    (stream,) = target.streams
    assert stream.finished is not None
    assert stream.finished.text == "Half an "
    assert stream.finished.notice == messages.timed_out_note("en")
    answerer.pieces = ["The VPN ", "client."]
    later = RecordingTarget()
    await asyncio.wait_for(chat.handle(message("And the lunch?"), later), 10)
    assert later.replies() == ["The VPN client."]


async def test_a_drain_lets_an_answer_in_flight_finish_within_its_grace() -> None:
    parts = Parts(knowledge=KnowledgeNames("handbook"), answerer=ScriptedAnswerer(["The VPN ", "|", "client."]))
    chat = manager(parts, default_kbs=("handbook",))
    target = RecordingTarget()
    turn = asyncio.create_task(chat.handle(message("Which VPN client?"), target))
    await asyncio.wait_for(parts.answerer.holding.wait(), 10)
    assert not chat.is_draining()
    draining = asyncio.create_task(chat.drain(10.0))
    await asyncio.sleep(0)
    assert chat.is_draining(), "from the drain's start on, /readyz says not ready"
    parts.answerer.release.set()
    assert await asyncio.wait_for(draining, 10) == 0
    await turn
    assert target.replies() == ["The VPN client."]


async def test_a_drain_past_its_grace_cuts_the_answer_with_a_note_and_leaves_the_next_question_stored() -> None:
    parts = Parts(knowledge=KnowledgeNames("handbook"), answerer=ScriptedAnswerer(["Half an ", "|", "answer"]))
    chat = manager(parts, default_kbs=("handbook",))
    first, second = RecordingTarget(), RecordingTarget()
    answering = asyncio.create_task(chat.handle(message("Which VPN client?"), first))
    await asyncio.wait_for(parts.answerer.holding.wait(), 10)
    waiting = asyncio.create_task(chat.handle(message("And the lunch?"), second))
    await wait_until(lambda: len(parts.conversations.messages) == 4, first.changed)  # the second is stored
    assert await asyncio.wait_for(chat.drain(0.1), 10) == 2
    for task in (answering, waiting):
        with pytest.raises(asyncio.CancelledError):
            await task
    (stream,) = first.streams
    assert stream.finished is not None
    assert (stream.finished.text, stream.finished.notice) == ("Half an ", messages.interrupted_note("en"))
    answers = [m for m in parts.conversations.messages if m.role == "assistant"]
    assert [(m.text, m.status, m.meta.get("outcome")) for m in answers] == [
        ("Half an ", "done", "interrupted"),
        ("", "streaming", None),  # not begun: the next process answers it
    ]
    assert second.replies() == []


class RestartingDatabase(Conversations):
    """Conversations whose database restarts: the next `away` reads of a turn's history and writes of its end fail,
    as statements do while PostgreSQL restarts; `written` is set on each write that goes through."""

    def __init__(self, away: int, *, reads: bool = True) -> None:
        super().__init__()
        self.away = away
        self._reads = reads
        self.written = asyncio.Event()

    async def turn_view(self, conversation_id: str, limit: int) -> tuple[int, list[MessageRecord]]:
        if self._reads:
            self._meet()
        return await super().turn_view(conversation_id, limit)

    async def complete_message(self, message_id: str, **fields: Any) -> None:
        self._meet()
        await super().complete_message(message_id, **fields)
        self.written.set()

    def _meet(self) -> None:
        if self.away:
            self.away -= 1
            raise ConnectionResetError("connection is closed: the database is restarting")

    def answers(self) -> list[tuple[str, str]]:
        return [(m.text, m.status) for m in self.messages if m.role == "assistant"]


async def test_a_turn_broken_by_a_database_restart_is_stored_failed_once_the_database_is_back() -> None:
    """The question was stored, then its history read and its failure's write both met the restart: the turn stayed
    `streaming` under a process that lives on, which no recovery takes over."""
    store = RestartingDatabase(away=2)
    parts = Parts(conversations=store, knowledge=KnowledgeNames("handbook"))
    target = RecordingTarget()
    await asyncio.wait_for(manager(parts, default_kbs=("handbook",)).handle(message("Which VPN client?"), target), 10)
    assert target.replies() == [messages.turn_failed("en")]
    await wait_until(lambda: store.answers() != [("", "streaming")], store.written)
    assert store.answers() == [("", "failed")]


async def test_an_answer_shown_while_the_database_restarts_is_stored_as_shown_once_it_is_back() -> None:
    store = RestartingDatabase(away=1, reads=False)
    parts = Parts(conversations=store, knowledge=KnowledgeNames("handbook"))
    target = RecordingTarget()
    await asyncio.wait_for(manager(parts, default_kbs=("handbook",)).handle(message("Which VPN client?"), target), 10)
    assert target.replies() == ["The VPN client."]
    await wait_until(lambda: store.answers() != [("", "streaming")], store.written)
    assert store.answers() == [("The VPN client.", "done")]
