"""The question's entities: by rule, or by the chat model in the seed's prompt shape with the rules as fallback."""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from rag.errors import ModelError
from rag.graph.entities import Entity, extract_entities
from rag.graph.reply import EXTRACTION_PROMPT, parse_extraction
from rag.ports import ChatModel
from rag.types import ChatMessage

log = logging.getLogger(__name__)


class QuestionEntities(Protocol):
    """Reads a question's entities."""

    async def entities(self, question: str) -> tuple[Entity, ...]:
        """The entities the question names."""
        ...


class RuleEntities:
    """The rule extractor (rag.graph.entities), as at ingestion: no model call."""

    async def entities(self, question: str) -> tuple[Entity, ...]:
        """The question's entities by rule."""
        return await asyncio.to_thread(extract_entities, question)


class ModelEntities:
    """Asks the chat model (one call a turn); a reply that is not JSON, a failure or a timeout fall back to rules."""

    def __init__(self, model: ChatModel, *, timeout: float = 5.0) -> None:
        self._model = model
        self._timeout = timeout
        self._rules = RuleEntities()

    async def entities(self, question: str) -> tuple[Entity, ...]:
        """The model's entities of the question, or the rules' when it gives none usable."""
        messages = [ChatMessage("system", EXTRACTION_PROMPT), ChatMessage("user", question)]
        try:
            async with asyncio.timeout(self._timeout):
                reply = await self._model.complete(messages)
        except TimeoutError:
            log.warning("graph entities=rules reason=timeout after %gs", self._timeout)
            return await self._rules.entities(question)
        except ModelError as exc:
            log.warning("graph entities=rules reason=model error: %s", exc)
            return await self._rules.entities(question)
        extraction = parse_extraction(reply)
        if extraction is None:
            return await self._rules.entities(question)
        return extraction.entities
