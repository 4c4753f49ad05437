"""Turns stored by TurnRecorder and read back by LOAD_HISTORY, on SQLite and on PostgreSQL."""

from __future__ import annotations

import pytest

from bot.chat.recorder import TurnRecorder, apology
from bot.errors import UserFacingError
from bot.words.messages import TURN_FAILED
from rag.pipeline import StageReport, TurnContext
from rag.stages.load_history import LoadHistory
from rag.types import Candidate
from storage.db import Database
from storage.repos.conversations import ConversationRepo
from tests.support.chat import VPN

LEAVE = Candidate(
    id="faq-leave",
    kind="faq",
    kb_id="kb",
    text="Q: How many days of paid leave do I get?",
    score=0.93,
    metadata={"question": "How many days of paid leave do I get?", "answers": ["25 days a year."]},
)


def _answered(query: str, outcome: str, selected: list[Candidate], conversation_id: str) -> TurnContext:
    turn = TurnContext(query=query, kb_ids=("kb",), conversation_id=conversation_id)
    turn.selected = selected
    turn.outcome = outcome
    turn.reports = [StageReport("SEARCH", 12.345, 0, 2, "faqs=0 chunks=2")]
    return turn


@pytest.fixture
def repo(db: Database) -> ConversationRepo:
    return ConversationRepo(db)


async def _next_turn(repo: ConversationRepo, conversation_id: str) -> TurnContext:
    turn = TurnContext(query="next", kb_ids=("kb",), conversation_id=conversation_id)
    await LoadHistory(repo).run(turn)
    return turn


async def test_a_finished_turn_is_stored_with_what_it_did(repo: ConversationRepo) -> None:
    conversation = await repo.resolve("cli", "", "finished", "")
    recorder = TurnRecorder(repo)
    opened = await recorder.begin(conversation.id, "  What is the VPN client?\x07")
    turn = _answered("What is the VPN client?", "extractive", [VPN], conversation.id)
    await recorder.finish(opened, turn, "> The VPN client is installed from the Software Center. [1]")

    question, answer = await repo.recent(conversation.id, 10)
    assert (question.role, question.text, question.status) == ("user", "  What is the VPN client?\x07", "done")
    assert (answer.role, answer.status, answer.request_id) == ("assistant", "done", opened.request_id)
    assert answer.meta == {
        "outcome": "extractive",
        "query": "What is the VPN client?",
        "rewritten": "",
        "kb_ids": ["kb"],
        "sources": [
            {
                "id": "chunk-vpn",
                "kind": "chunk",
                "document_id": "doc-vpn",
                "title": "vpn.md",
                "position": 2,
                "score": 0.031,
                "chunk_ids": ["chunk-vpn"],
            }
        ],
        "stages": [{"name": "SEARCH", "ms": 12.3, "in": 0, "out": 2, "note": "faqs=0 chunks=2"}],
    }
    later = await _next_turn(repo, conversation.id)
    assert later.history == [("What is the VPN client?", "> The VPN client is installed from the Software Center. [1]")]
    assert later.history_refs == ("chunk-vpn",)


async def test_the_question_being_answered_is_not_its_own_history(repo: ConversationRepo) -> None:
    conversation = await repo.resolve("cli", "", "current", "")
    recorder = TurnRecorder(repo)
    await recorder.begin(conversation.id, "How many days of paid leave do I get?")
    current = await _next_turn(repo, conversation.id)
    assert (current.history, current.history_refs) == ([], ())


async def test_failed_and_refused_turns_are_stored_but_are_no_history(repo: ConversationRepo) -> None:
    conversation = await repo.resolve("cli", "", "failures", "")
    recorder = TurnRecorder(repo)
    opened = await recorder.begin(conversation.id, "How many days of paid leave do I get?")
    leave = _answered("How many days of paid leave do I get?", "faq_direct", [LEAVE], conversation.id)
    await recorder.finish(opened, leave, "25 days.")

    broken = await recorder.begin(conversation.id, "And sick days?")
    error = RuntimeError("connection reset")
    error.add_note("pipeline=rag_stream stage=CHAT_COMPLETION_STREAM")
    turn = _answered("And sick days?", "generated", [VPN], conversation.id)
    await recorder.fail(broken, error, turn=turn, answer="Sick days are")
    refused = await recorder.begin(conversation.id, "🙂🙂🙂")
    await recorder.finish(refused, _answered("🙂🙂🙂", "refused", [], conversation.id), "I can only answer words.")

    stored = await repo.recent(conversation.id, 10)
    failed = stored[3]
    assert (failed.status, failed.text) == ("failed", "Sick days are")
    assert failed.meta["outcome"] == "failed"
    assert failed.meta["error"] == {
        "type": "RuntimeError",
        "message": "connection reset",
        "notes": ["pipeline=rag_stream stage=CHAT_COMPLETION_STREAM"],
    }
    assert failed.meta["stages"][0]["name"] == "SEARCH"
    assert stored[5].meta["outcome"] == "refused"
    assert stored[5].meta["sources"] == []
    later = await _next_turn(repo, conversation.id)
    assert later.history == [("How many days of paid leave do I get?", "25 days.")]
    assert later.history_refs == ("faq-leave",)


async def test_a_turn_failing_before_its_pipeline_returned_is_stored_too(repo: ConversationRepo) -> None:
    conversation = await repo.resolve("cli", "", "early", "")
    recorder = TurnRecorder(repo)
    opened = await recorder.begin(conversation.id, "When does the office open?")
    await recorder.fail(opened, TimeoutError("index did not answer"))
    _, answer = await repo.recent(conversation.id, 10)
    assert (answer.status, answer.text) == ("failed", "")
    assert answer.meta == {
        "sources": [],
        "outcome": "failed",
        "error": {"type": "TimeoutError", "message": "index did not answer", "notes": []},
    }


async def test_an_answer_stored_while_streaming_is_completed_in_place(repo: ConversationRepo) -> None:
    conversation = await repo.resolve("slack", "T1", "C1", "1.2")
    recorder = TurnRecorder(repo)
    opened = await recorder.open(conversation.id, "What is the VPN client?")
    in_flight = await _next_turn(repo, conversation.id)
    assert in_flight.history == []
    await recorder.finish(opened, _answered("What is the VPN client?", "generated", [VPN], conversation.id), "It is.")
    stored = await repo.recent(conversation.id, 10)
    assert [(message.role, message.status, message.text) for message in stored] == [
        ("user", "done", "What is the VPN client?"),
        ("assistant", "done", "It is."),
    ]
    assert stored[1].id == opened.answer_id


def test_the_apology_is_the_errors_own_user_message_when_it_has_one() -> None:
    assert apology(UserFacingError("That knowledge base is being rebuilt; try again in a minute."), "en").startswith(
        "That"
    )
    assert apology(RuntimeError("secret internals"), "en") == TURN_FAILED
