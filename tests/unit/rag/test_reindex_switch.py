"""A reindex switches generations only once its caller confirms it still holds the index; else it drops its own."""

from __future__ import annotations

from collections.abc import Collection as Container
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from rag.lexical import LexicalAnalyzer
from rag.reindex import Reindexer
from rag.types import Vector
from storage.records import ChunkRecord, FaqQuestionRecord, FaqRecord, KnowledgeBaseRecord
from storage.weaviate.collections import Collection

KB = KnowledgeBaseRecord("kb-1", "handbook", "", {}, datetime(2026, 3, 1, tzinfo=UTC))


class RecordingRebuild:
    """Our Rebuild protocol, recording what the reindex did with its new generation."""

    def __init__(self, log: list[str], collection: Collection) -> None:
        self._log = log
        self._name = collection.value

    async def copy_except(self, kb_ids: Container[str]) -> int:
        return 0

    async def insert_chunks(self, chunks: Sequence[ChunkRecord], vectors: Sequence[Sequence[float]]) -> None:
        self._log.append(f"insert {self._name}")

    async def insert_faq_questions(
        self, questions: Sequence[FaqQuestionRecord], vectors: Sequence[Sequence[float]]
    ) -> None:
        self._log.append(f"insert {self._name}")

    async def switch(self) -> None:
        self._log.append(f"switch {self._name}")

    async def discard(self) -> None:
        self._log.append(f"discard {self._name}")


class RecordingIndex:
    """Our RebuildableIndex protocol: an up-to-date index whose rebuilds record into one log."""

    def __init__(self) -> None:
        self.log: list[str] = []

    def missing_properties(self) -> dict[Collection, tuple[str, ...]]:
        return {}

    def stale_terms(self) -> dict[Collection, int]:
        return {}

    def foreign_vectors(self) -> dict[Collection, str]:
        return {}

    async def begin_rebuild(self, collection: Collection) -> RecordingRebuild:
        return RecordingRebuild(self.log, collection)


class NoChunks:
    async def chunk_count(self, kb_id: str) -> int:
        return 0

    async def chunk_page(self, kb_id: str, after: str, limit: int) -> list[ChunkRecord]:
        return []


class NoFaqs:
    async def in_kb(self, kb_id: str) -> list[FaqRecord]:
        return []


class NoEmbedder:
    dimension = 3
    model_id = "none"
    provider = "none"

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        raise AssertionError("nothing to embed")


class HoldLost(Exception):
    pass


def _reindexer(index: RecordingIndex) -> Reindexer:
    return Reindexer(index, NoChunks(), NoFaqs(), NoEmbedder(), LexicalAnalyzer())  # type: ignore[arg-type]


async def test_the_switch_waits_for_the_caller_to_confirm_its_hold() -> None:
    index = RecordingIndex()
    confirmed: list[str] = []

    async def confirm() -> None:
        confirmed.append(f"confirmed before {len(index.log)} steps")

    await _reindexer(index).reindex(KB, [KB], before_switch=confirm)

    assert confirmed == ["confirmed before 0 steps"]
    assert index.log == ["switch RagbotChunk", "switch RagbotFaqQuestion"]


async def test_a_hold_lost_before_the_switch_drops_the_new_generation_and_keeps_the_live_one() -> None:
    index = RecordingIndex()

    async def lost() -> None:
        raise HoldLost

    with pytest.raises(HoldLost):
        await _reindexer(index).reindex(KB, [KB], before_switch=lost)

    assert index.log == ["discard RagbotChunk", "discard RagbotFaqQuestion"]
