"""The LOAD_HISTORY stage: the conversation's answered rounds and the latest answer's sources."""

from __future__ import annotations

from rag.history import HistoryConfig, HistorySource, answered_rounds
from rag.pipeline import TurnContext


class LoadHistory:
    """Reads conversation_id, stored_history; writes history, history_refs."""

    name = "LOAD_HISTORY"

    def __init__(self, source: HistorySource, config: HistoryConfig | None = None) -> None:
        self._source = source
        self._config = config or HistoryConfig()

    async def run(self, turn: TurnContext) -> str:
        if not turn.conversation_id:
            return "skipped=no_conversation"
        if turn.stored_history is not None:
            messages = turn.stored_history[-self._config.limit :] if self._config.limit else ()
        else:
            messages = tuple(await self._source.recent(turn.conversation_id, self._config.limit))
        rounds = answered_rounds(messages, self._config.max_rounds)
        turn.history = [(done.question, done.answer) for done in rounds]
        # Only the latest answer's sources: a follow-up refers to what was just said.
        turn.history_refs = rounds[-1].source_ids if rounds else ()
        return f"messages={len(messages)} rounds={len(rounds)} refs={len(turn.history_refs)}"
