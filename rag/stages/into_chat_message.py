"""The INTO_CHAT_MESSAGE stage: the selected passages and history as the model's messages."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from rag.config import AnswerConfig
from rag.pipeline import TurnContext
from rag.prompt import build_messages
from rag.tokens import TokenCounter


class IntoChatMessage:
    """Reads search_query, selected, history; writes messages."""

    name = "INTO_CHAT_MESSAGE"

    def __init__(
        self, tokens: TokenCounter, config: AnswerConfig, clock: Callable[[], datetime] = datetime.now
    ) -> None:
        self._tokens = tokens
        self._config = config
        self._clock = clock

    async def run(self, turn: TurnContext) -> str:
        built = build_messages(
            turn.query,
            turn.selected,
            history=turn.history,
            tokens=self._tokens,
            budget=self._config.budget,
            template=self._config.template,
            faq_priority=self._config.faq_priority,
            direct_answer_threshold=self._config.direct_answer_threshold,
            now=self._clock(),
        )
        turn.messages = list(built.messages)
        turn.selected = list(built.used)
        return f"dropped={built.dropped}"
