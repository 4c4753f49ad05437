"""A cap on concurrent chat-model calls across every chat, so a burst of questions queues instead of
tripping the model provider's own rate limit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from rag.ports import ChatModel
from rag.types import ChatMessage


class LimitedChatModel:
    """A ChatModel that lets at most `max_calls` calls (a stream counts until it ends) run at once."""

    def __init__(self, model: ChatModel, max_calls: int) -> None:
        self._model = model
        self._slots = asyncio.Semaphore(max_calls)

    @property
    def model_id(self) -> str:
        """The wrapped model's name."""
        return self._model.model_id

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        """The whole answer, once a slot is free."""
        async with self._slots:
            return await self._model.complete(messages)

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        """The answer's deltas; the slot is held until the stream ends or is closed."""
        async with self._slots:
            async for delta in self._model.stream(messages):
                yield delta
