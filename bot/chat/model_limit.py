"""A cap on concurrent chat-model calls across every chat, so a burst of questions queues instead of
tripping the model provider's own rate limit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from rag.ports import ChatModel
from rag.types import ChatMessage


class LimitedChatModel:
    """A ChatModel whose calls (a stream counts until it ends) each hold one of `slots`, which other models' calls
    (the vision and speech models reading a question's media) may share: one cap on model calls at once."""

    def __init__(self, model: ChatModel, slots: asyncio.Semaphore) -> None:
        self._model = model
        self._slots = slots

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
