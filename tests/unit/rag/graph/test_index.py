"""Reading chunks into the graph with a chat model: bounded calls, and every failure read by rule, logged once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence

import pytest

from rag.errors import ModelError
from rag.graph.index import GraphIndexer, ModelExtraction, chunk_graphs
from rag.types import ChatMessage
from storage.records import ChunkGraph, ChunkRecord

READING = '{"nodes": [{"name": "Falcon"}], "relations": [{"node1": "Falcon", "node2": "Dana", "type": "led by"}]}'


class RecordingGraph:
    """A graph store whose one base is on; keeps what it is asked to add."""

    def __init__(self) -> None:
        self.added: list[ChunkGraph] = []

    async def enabled(self, kb_ids: Sequence[str]) -> set[str]:
        return {"kb"} & set(kb_ids)

    async def switch(self, kb_id: str, *, enabled: bool) -> bool:
        raise NotImplementedError

    async def add(self, kb_id: str, chunks: Sequence[ChunkGraph]) -> int:
        self.added.extend(chunks)
        return sum(len(chunk.entities) for chunk in chunks)

    async def forget_document(self, document_id: str) -> None:
        raise NotImplementedError

    async def chunks_mentioning(self, kb_ids: Sequence[str], keys: Sequence[str], limit: int) -> dict[str, list[str]]:
        raise NotImplementedError

    async def mentions_among(
        self, kb_ids: Sequence[str], keys: Sequence[str], chunk_ids: Sequence[str]
    ) -> dict[str, set[str]]:
        raise NotImplementedError

    async def related(self, kb_ids: Sequence[str], keys: Sequence[str], limit: int) -> list[str]:
        raise NotImplementedError


class ScriptedModel:
    """Answers each chunk by its text: READING, a hang, a model error or prose; counts the calls in flight."""

    def __init__(self, full_at: int = 0) -> None:
        self.in_flight = 0
        self.most_in_flight = 0
        self.release = asyncio.Event()
        # Set once `full_at` calls are in flight together.
        self.full = asyncio.Event()
        self._full_at = full_at

    @property
    def model_id(self) -> str:
        return "fake"

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        text = messages[-1].content
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        if self.in_flight == self._full_at:
            self.full.set()
        try:
            if text.startswith("Hang"):
                await asyncio.Event().wait()
            if text.startswith("Error"):
                raise ModelError("503 from the model API")
            if text.startswith("Prose"):
                return "The passage names Project Heron."
            await self.release.wait()
            return READING
        finally:
            self.in_flight -= 1

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        yield await self.complete(messages)


def _chunk(n: int, text: str) -> ChunkRecord:
    return ChunkRecord(f"c{n}", "kb", "doc", None, n, 0, len(text), text, text)


async def test_failed_chunks_are_read_by_rule_and_logged_in_one_line(caplog: pytest.LogCaptureFixture) -> None:
    model, graph = ScriptedModel(), RecordingGraph()
    model.release.set()
    chunks = [_chunk(0, "Falcon"), _chunk(1, "Hang on, Project Osprey."), _chunk(2, "Error at Project Kite.")]
    chunks.append(_chunk(3, "Prose about Project Heron."))
    indexer = GraphIndexer(graph, ModelExtraction(model, timeout=0.2))

    await indexer.index("kb", chunks)

    by_chunk = {chunk.chunk_id: chunk for chunk in graph.added}
    assert [(r.source, r.target) for r in by_chunk["c0"].relations] == [("falcon", "dana")]
    assert {e.key for e in by_chunk["c0"].entities} == {"falcon", "dana"}
    for n, key in ((1, "project osprey"), (2, "project kite"), (3, "project heron")):
        assert key in {e.key for e in by_chunk[f"c{n}"].entities}
        assert by_chunk[f"c{n}"].relations == ()
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == ["graph extraction=rules chunks=3 of 4 model_error=1 not_json=1 timeout=1"]


async def test_at_most_the_configured_calls_are_in_flight() -> None:
    model, graph = ScriptedModel(full_at=3), RecordingGraph()
    indexer = GraphIndexer(graph, ModelExtraction(model, concurrency=3))
    task = asyncio.create_task(indexer.index("kb", [_chunk(n, f"Falcon {n}") for n in range(12)]))
    async with asyncio.timeout(5):
        await model.full.wait()
    # Give the nine others every chance to start a call while the three are held.
    for _ in range(20):
        await asyncio.sleep(0)

    assert model.in_flight == 3
    model.release.set()
    await task
    assert model.most_in_flight == 3
    assert len(graph.added) == 12


async def test_without_a_model_the_chunks_are_read_by_rule_as_before() -> None:
    graph = RecordingGraph()
    chunks = [_chunk(0, "Project Falcon is led by Dana Whitfield."), _chunk(1, "nothing named here")]

    await GraphIndexer(graph).index("kb", chunks)

    assert graph.added == chunk_graphs(chunks)
    assert [chunk.chunk_id for chunk in graph.added] == ["c0"]
    assert all(chunk.relations == () for chunk in graph.added)
