"""ConversationRepo contract, run on SQLite and on PostgreSQL: find-or-create, messages read back in write order."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from storage.db import Database
from storage.errors import DuplicateEvent, NotFound
from storage.repos.conversations import COMMAND_EVENT_TTL, ConversationRepo

SAME_INSTANT = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def _frozen_clock() -> datetime:
    return SAME_INSTANT


async def test_resolve_returns_the_same_conversation_for_the_same_key(db: Database) -> None:
    repo = ConversationRepo(db)
    first = await repo.resolve("slack", "T1", "C1", "1700000000.000100")
    again = await repo.resolve("slack", "T1", "C1", "1700000000.000100")
    other_thread = await repo.resolve("slack", "T1", "C1", "")
    other_platform = await repo.resolve("telegram", "T1", "C1", "1700000000.000100")
    assert again == first
    assert (first.platform, first.workspace, first.chat, first.thread) == ("slack", "T1", "C1", "1700000000.000100")
    assert len({first.id, other_thread.id, other_platform.id}) == 3


async def test_turns_racing_to_create_a_conversation_share_one(db: Database) -> None:
    repos = [ConversationRepo(db) for _ in range(6)]
    found = await asyncio.gather(*(repo.resolve("telegram", "", "-100200", "") for repo in repos))
    assert len({conversation.id for conversation in found}) == 1


async def test_recent_keeps_write_order_when_timestamps_tie(db: Database) -> None:
    repo = ConversationRepo(db, clock=_frozen_clock)
    conversation = await repo.resolve("cli", "", "tie", "")
    for n in range(40):
        await repo.add_message(conversation.id, f"r{n // 2}", "user" if n % 2 == 0 else "assistant", f"m{n}")
    everything = await repo.recent(conversation.id, 100)
    assert [message.text for message in everything] == [f"m{n}" for n in range(40)]
    assert {message.created_at.replace(tzinfo=UTC) for message in everything} == {SAME_INSTANT}
    newest = await repo.recent(conversation.id, 5)
    assert [message.text for message in newest] == [f"m{n}" for n in range(35, 40)]


async def test_recent_reads_only_its_conversation_and_respects_the_limit(db: Database) -> None:
    repo = ConversationRepo(db)
    mine = await repo.resolve("cli", "", "mine", "")
    theirs = await repo.resolve("cli", "", "theirs", "")
    await repo.add_message(mine.id, "r1", "user", "mine 1")
    await repo.add_message(theirs.id, "r2", "user", "theirs 1")
    await repo.add_message(mine.id, "r3", "user", "mine 2")
    assert [message.text for message in await repo.recent(mine.id, 20)] == ["mine 1", "mine 2"]
    assert [message.text for message in await repo.recent(mine.id, 1)] == ["mine 2"]
    assert await repo.recent(mine.id, 0) == []
    assert await repo.recent("no-such-conversation", 20) == []


async def test_a_message_written_while_streaming_is_finished_in_place(db: Database) -> None:
    repo = ConversationRepo(db, clock=_frozen_clock)
    conversation = await repo.resolve("slack", "T1", "C2", "")
    question = await repo.add_message(conversation.id, "r1", "user", "When does the office open?")
    draft = await repo.add_message(conversation.id, "r1", "assistant", "", "streaming", {"platform": "slack"})
    later = await repo.add_message(conversation.id, "r2", "user", "And on Saturdays?")
    done = await repo.finish_message(
        draft.id, text="From 9 to 17.", meta={"outcome": "extractive"}, platform_message_id="1700.1"
    )
    assert (done.id, done.status, done.text, done.platform_message_id) == (draft.id, "done", "From 9 to 17.", "1700.1")
    assert done.meta == {"platform": "slack", "outcome": "extractive"}
    stored = await repo.recent(conversation.id, 10)
    assert [message.id for message in stored] == [question.id, draft.id, later.id]
    assert stored[1] == done


async def test_unknown_ids_raise_not_found(db: Database) -> None:
    repo = ConversationRepo(db)
    with pytest.raises(NotFound):
        await repo.add_message("no-such-conversation", "r1", "user", "hello")
    with pytest.raises(NotFound):
        await repo.finish_message("no-such-message", text="x")


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("nul\x00byte", "nul\ufffdbyte"),
        ("lone \ud800 surrogate", "lone \ufffd surrogate"),
        ("emoji 🙂 and 中文 stay", "emoji 🙂 and 中文 stay"),
        ("x" * 20_000, "x" * 20_000),
    ],
    ids=["nul", "surrogate", "unicode", "20k-chars"],
)
async def test_any_text_a_person_sends_is_stored(db: Database, sent: str, stored: str) -> None:
    repo = ConversationRepo(db)
    conversation = await repo.resolve("web", "", "odd-input", "")
    message = await repo.add_message(conversation.id, "r1", "user", sent, meta={"echo": [sent], sent[:8]: 1})
    (read,) = await repo.recent(conversation.id, 1)
    assert read == message
    assert read.text == stored
    assert read.meta == {"echo": [stored], stored[:8]: 1}


async def test_a_command_event_is_claimed_once_even_by_a_new_repo_and_swept_after_its_ttl(db: Database) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    first = ConversationRepo(db, clock=lambda: now[0])
    await first.claim_command("telegram::42:7")
    await first.claim_command("telegram::42:8")
    again = ConversationRepo(db, clock=lambda: now[0])  # a restarted process, on the same database
    with pytest.raises(DuplicateEvent):
        await again.claim_command("telegram::42:7")
    racing = await asyncio.gather(*(again.claim_command("slack:T1:D1:9.0") for _ in range(3)), return_exceptions=True)
    assert sorted(type(result).__name__ for result in racing) == ["DuplicateEvent", "DuplicateEvent", "NoneType"]
    now[0] += COMMAND_EVENT_TTL + timedelta(minutes=1)
    swept = ConversationRepo(db, clock=lambda: now[0])
    await swept.claim_command("telegram::42:7")  # long gone: no redelivery comes this late
