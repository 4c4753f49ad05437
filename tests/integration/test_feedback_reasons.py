"""Why a 👎, stored with the answer (SQLite and PostgreSQL), and what went wrong grouped by meaning: `ragbot stats`
and an admin's `/stats`, with the real local embedder."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.chat.feedback import NOTE_MAX, give_reason
from bot.chat.manager import ChatPolicy, ConversationManager
from bot.cli.stats import compute_stats, render_stats
from bot.commands.registry import parse_command
from bot.knowledge.misses import MissReports, misses_of
from bot.knowledge.retention import Retention, RetentionPolicy
from bot.types import ConversationKey, IncomingMessage, UserRef
from bot.words import messages
from bot.words.catalogue import catalogue
from rag.models.embedders import OnnxEmbedder
from storage.db import Database
from storage.errors import NotFound, ReasonRefused
from storage.records import MessageRecord
from storage.repos.conversations import ConversationRepo
from storage.repos.jobs import JobRepo
from storage.repos.retention import RetentionRepo
from tests.support.chat import RecordingTarget
from tests.support.chat_world import ChatWorld

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
ADMIN = UserRef("u-admin")
ALICE = UserRef("u-alice")
GROUP = ConversationKey("test", "team", "group-1")
VPN = [
    "How do I connect to the VPN from my phone?",
    "vpn on mobile does not work",
    "Can I use the VPN on my iPhone?",
]
LUNCH = ["When is lunch served?", "What time does the canteen open for lunch?"]


async def _answer(repo: ConversationRepo, conversation_id: str, question: str, **meta: Any) -> MessageRecord:
    request = f"r-{question}"
    await repo.add_message(conversation_id, request, "user", question)
    return await repo.add_message(conversation_id, request, "assistant", "An answer.", meta=meta or None)


# Storage, on both databases.


async def test_whoever_pressed_thumbs_down_may_say_why_and_it_is_stored_with_the_answer(db: Database) -> None:
    repo = ConversationRepo(db)
    conversation = await repo.resolve("slack", "T1", "C1", "1.1")
    answer = await _answer(repo, conversation.id, "VPN?")
    await repo.set_feedback(answer.id, "down", conversation_id=conversation.id, by="U1")
    saved = await repo.set_feedback_reason(answer.id, "outdated", "The page moved.", by="U1")
    assert (saved.feedback, saved.feedback_reason, saved.feedback_note, saved.feedback_by) == (
        "down",
        "outdated",
        "The page moved.",
        "U1",
    )
    assert (await repo.message(answer.id)).feedback_reason == "outdated"


@pytest.mark.parametrize(
    ("verdict", "by", "why"),
    [("", "U1", "not_down"), ("up", "U1", "not_down"), ("down", "U2", "not_rater")],
    ids=["no press", "a thumbs up", "someone else's thumbs down"],
)
async def test_a_reason_without_ones_own_thumbs_down_is_refused_and_nothing_is_stored(
    db: Database, verdict: str, by: str, why: str
) -> None:
    repo = ConversationRepo(db)
    conversation = await repo.resolve("telegram", "", "-100", "")
    answer = await _answer(repo, conversation.id, "VPN?")
    if verdict:
        await repo.set_feedback(answer.id, verdict, by="U1")
    with pytest.raises(ReasonRefused) as refused:
        await repo.set_feedback_reason(answer.id, "wrong", "", by=by)
    assert refused.value.why == why
    assert (await repo.message(answer.id)).feedback_reason == ""


async def test_a_reason_for_a_message_that_is_no_answer_or_of_another_conversation_is_not_found(db: Database) -> None:
    repo = ConversationRepo(db)
    mine = await repo.resolve("web", "", "s1")
    theirs = await repo.resolve("web", "", "s2")
    answer = await _answer(repo, theirs.id, "VPN?")
    await repo.set_feedback(answer.id, "down")
    question = (await repo.recent(theirs.id, 5))[0]
    for message_id, conversation_id in ((question.id, theirs.id), (answer.id, mine.id), ("no-such-id", mine.id)):
        with pytest.raises(NotFound):
            await repo.set_feedback_reason(message_id, "wrong", "", conversation_id=conversation_id)


async def test_a_new_verdict_or_presser_clears_the_reason_and_a_double_submit_keeps_one(db: Database) -> None:
    repo = ConversationRepo(db)
    conversation = await repo.resolve("slack", "T1", "C2", "1.2")
    answer = await _answer(repo, conversation.id, "VPN?")
    await repo.set_feedback(answer.id, "down", by="U1")
    await repo.set_feedback_reason(answer.id, "wrong", "no", by="U1")
    await repo.set_feedback_reason(answer.id, "wrong", "no", by="U1")  # the modal sent twice
    await repo.set_feedback(answer.id, "down", by="U1")  # the same press again keeps it
    assert (await repo.message(answer.id)).feedback_reason == "wrong"
    await repo.set_feedback(answer.id, "up", by="U1")
    cleared = await repo.message(answer.id)
    assert (cleared.feedback, cleared.feedback_reason, cleared.feedback_note) == ("up", "", "")
    await repo.set_feedback(answer.id, "down", by="U1")
    await repo.set_feedback_reason(answer.id, "too_long", "", by="U1")
    await repo.set_feedback(answer.id, "down", by="U2")  # another person's 👎 answers another question
    assert (await repo.message(answer.id)).feedback_reason == ""


@pytest.mark.parametrize(
    ("reason", "note", "result"),
    [
        ("outdated", "x" * NOTE_MAX, "saved"),
        ("outdated", "x" * (NOTE_MAX + 1), "too_long"),
        ("because", "", "unknown"),
        ("", "", "unknown"),
    ],
)
async def test_bad_reasons_get_a_result_the_person_is_told_and_nothing_half_written(
    db: Database, reason: str, note: str, result: str
) -> None:
    repo = ConversationRepo(db)
    conversation = await repo.resolve("web", "", "s3")
    answer = await _answer(repo, conversation.id, "VPN?")
    await repo.set_feedback(answer.id, "down")
    assert await give_reason(repo, conversation.id, answer.id, reason, note, by="") == result
    stored = await repo.message(answer.id)
    assert (stored.feedback_reason, stored.feedback_note) == ((reason, note) if result == "saved" else ("", ""))


async def test_retention_keeps_how_often_each_reason_was_given(db: Database) -> None:
    old = NOW - timedelta(days=40)
    past = ConversationRepo(db, clock=lambda: old)
    idle = await past.resolve("web", "", "idle")
    for n, reason in enumerate(("outdated", "outdated", "wrong", "")):
        answer = await _answer(past, idle.id, f"question {n}")
        await past.set_feedback(answer.id, "down")
        if reason:
            await past.set_feedback_reason(answer.id, reason, "")
    retention = Retention(RetentionRepo(db), RetentionPolicy(conversation_days=30), jobs=JobRepo(db))
    await retention.sweep(NOW)
    since = (NOW - timedelta(days=60)).date().isoformat()
    assert await RetentionRepo(db).tallied_reasons(since) == Counter({"outdated": 2, "wrong": 1})
    assert await RetentionRepo(db).tallies(since) == [(old.date().isoformat(), 4, 0, 4)]


# Grouped by meaning, with the real embedder.


async def _asked(db: Database) -> ConversationRepo:
    repo = ConversationRepo(db)
    conversation = await repo.resolve("test", "team", "group-1", "")
    for question in VPN:
        await _answer(repo, conversation.id, question, outcome="no_match")
    for question, reason in zip(LUNCH, ("outdated", "wrong"), strict=True):
        answer = await _answer(repo, conversation.id, question, outcome="generated")
        await repo.set_feedback(answer.id, "down", by="U1")
        await repo.set_feedback_reason(answer.id, reason, "The canteen moved." if reason == "wrong" else "", by="U1")
    other = await repo.resolve("test", "team", "elsewhere", "")
    await _answer(repo, other.id, "Where do I park my bike?", outcome="no_match")
    return repo


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_paraphrases_land_in_one_group_and_unrelated_questions_do_not(
    db: Database, embedder: OnnxEmbedder
) -> None:
    repo = await _asked(db)
    misses = await misses_of(await repo.messages_since(NOW - timedelta(days=3650)), embedder)
    assert [(group.count, group.example in VPN) for group in misses.unanswered] == [(3, True), (1, False)]
    (lunch,) = misses.disliked
    assert (lunch.count, dict(lunch.reasons), lunch.notes) == (2, {"outdated": 1, "wrong": 1}, ("The canteen moved.",))
    assert (misses.unanswered_total, misses.disliked_total) == (4, 2)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_ragbot_stats_prints_groups_with_counts_an_example_and_the_reasons(
    db: Database, embedder: OnnxEmbedder
) -> None:
    repo = await _asked(db)
    stored = await repo.messages_since(NOW - timedelta(days=3650))
    report = render_stats(compute_stats(stored), 7, await misses_of(stored, embedder, top=1), Counter(wrong=1))
    lines = report.splitlines()
    start = lines.index(
        "Asked, and nothing was found (make these FAQs or add documents; 4 in all, by meaning; "
        "1 more in smaller groups):"
    )
    assert lines[start + 1].startswith("     3 x  ")
    assert lines[start + 1].removeprefix("     3 x  ") in VPN
    disliked = lines.index("Answers marked not helpful (2 in all, by meaning):")
    assert lines[disliked + 1].endswith("  [outdated 1, wrong 1]")
    assert lines[disliked + 2].strip() == "\u201cThe canteen moved.\u201d"
    assert lines[-1] == "Why not helpful: wrong 1"


def _stats_message(text: str, user: UserRef) -> IncomingMessage:
    return IncomingMessage(key=GROUP, message_id="", user=user, text=text, command=parse_command(text), private=False)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_stats_in_a_chat_is_for_its_admins_and_covers_that_chat_only(
    world: ChatWorld, embedder: OnnxEmbedder, db: Database
) -> None:
    await _asked(db)
    world.misses = MissReports(world.conversations, embedder)
    policy = ChatPolicy(admins={"test": frozenset({ADMIN.id})}, default_kbs=("handbook",))
    manager = ConversationManager(world.chat_parts(), policy, world.command_parts())
    person, admin = RecordingTarget(), RecordingTarget()
    await manager.handle(_stats_message("/stats", ALICE), person)
    await manager.handle(_stats_message("/stats 30", ADMIN), admin)
    assert person.replies() == [messages.admins_only("stats", "en")]
    (report,) = admin.replies()
    assert report.startswith("**Last 30 days here:** 5 questions, 0 👍, 2 👎")
    assert "Asked, and nothing was found** (3;" in report
    assert "bike" not in report  # another chat's question
    assert catalogue("en").text("stats.group", count=2, example="") in report
    assert "(Outdated 1, Wrong 1)" in report


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("days", ["0", "366", "week", "7 8"])
async def test_stats_with_a_bad_number_of_days_says_how_to_write_it(world: ChatWorld, days: str) -> None:
    world.misses = MissReports(world.conversations, _NoEmbedder())
    policy = ChatPolicy(admins={"test": frozenset({ADMIN.id})}, default_kbs=("handbook",))
    manager = ConversationManager(world.chat_parts(), policy, world.command_parts())
    admin = RecordingTarget()
    await manager.handle(_stats_message(f"/stats {days}", ADMIN), admin)
    assert admin.replies() == [messages.stats_bad_days(365, "en")]


class _NoEmbedder:
    """Never asked: a refused /stats reads nothing."""

    provider, model_id, dimension = "none", "none", None

    def prompt(self, kind: str) -> str:
        return ""

    async def embed(self, texts: Any, *, kind: str = "passage") -> list[list[float]]:
        raise AssertionError("embedded for a refused command")
