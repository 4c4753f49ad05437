"""The LOAD_HISTORY stage: the conversation's latest messages read, its answered rounds and latest sources kept."""

from __future__ import annotations

from collections.abc import Sequence

from rag.history import HistoryConfig
from rag.pipeline import TurnContext
from rag.stages.load_history import LoadHistory
from storage.records import MessageRecord
from tests.support.history_messages import _message, _round, _sources


class FakeHistory:
    """Our HistorySource protocol over a list, recording what it was asked."""

    def __init__(self, messages: Sequence[MessageRecord]) -> None:
        self.messages = list(messages)
        self.calls: list[tuple[str, int]] = []

    async def recent(self, conversation_id: str, limit: int) -> list[MessageRecord]:
        self.calls.append((conversation_id, limit))
        return self.messages[-limit:]


async def test_load_history_writes_the_rounds_and_the_latest_answers_sources() -> None:
    source = FakeHistory(
        [
            *_round(
                "r1", "What is the VPN client?", "It is installed from the Software Center.", sources=_sources("a")
            ),
            *_round("r2", "Who runs it?", "The IT desk.", sources=_sources("b", "c")),
            _message("r3", "user", "And on weekends?"),
            _message("r3", "assistant", "partial", "failed", sources=_sources("z")),
            _message("r4", "user", "How do I install it?"),
        ]
    )
    turn = TurnContext(query="How do I install it?", kb_ids=("kb",), conversation_id="c")
    note = await LoadHistory(source, HistoryConfig(limit=7, max_rounds=5)).run(turn)
    assert source.calls == [("c", 7)]
    assert turn.history == [
        ("What is the VPN client?", "It is installed from the Software Center."),
        ("Who runs it?", "The IT desk."),
    ]
    assert turn.history_refs == ("b", "c")
    assert note == "messages=7 rounds=2 refs=2"


async def test_the_latest_answer_without_sources_leaves_no_refs() -> None:
    source = FakeHistory(
        [*_round("r1", "q1", "a1", sources=_sources("a")), *_round("r2", "thanks!", "You're welcome.")]
    )
    turn = TurnContext(query="q", kb_ids=(), conversation_id="c")
    await LoadHistory(source).run(turn)
    assert [question for question, _ in turn.history] == ["q1", "thanks!"]
    assert turn.history_refs == ()


async def test_the_limit_bounds_the_messages_read() -> None:
    source = FakeHistory([message for n in range(1, 4) for message in _round(f"r{n}", f"q{n}", f"a{n}")])
    turn = TurnContext(query="q", kb_ids=(), conversation_id="c")
    # Three messages reach back to the middle of round 2: its answer alone is no round.
    await LoadHistory(source, HistoryConfig(limit=3)).run(turn)
    assert turn.history == [("q3", "a3")]


async def test_without_a_conversation_the_stage_is_skipped_and_given_history_kept() -> None:
    source = FakeHistory(_round("r1", "q1", "a1"))
    turn = TurnContext(query="q", kb_ids=(), history=[("given", "history")])
    note = await LoadHistory(source).run(turn)
    assert note == "skipped=no_conversation"
    assert source.calls == []
    assert turn.history == [("given", "history")]
