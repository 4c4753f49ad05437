"""The entity leg over hand fakes of its ports: off bases cost nothing, a model's bad reply falls back to rules."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence

import pytest

from rag.errors import ModelError
from rag.graph.leg import SWITCH_TTL, EntitySearch, GraphSwitches
from rag.graph.question import ModelEntities, RuleEntities
from rag.graph.rank import EntityLimits
from rag.pipeline import TurnContext
from rag.types import Candidate, ChatMessage
from storage.records import ChunkGraph


class MemoryGraph:
    """Mentions in memory: folded name -> chunk ids, per knowledge base; counts the switch reads."""

    def __init__(
        self,
        mentions: Mapping[str, Mapping[str, Sequence[str]]],
        on: set[str],
        relations: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.mentions = mentions
        self.on = on
        self.relations = relations
        self.switch_reads = 0
        self.asked: list[str] = []

    async def enabled(self, kb_ids: Sequence[str]) -> set[str]:
        self.switch_reads += 1
        return self.on & set(kb_ids)

    async def switch(self, kb_id: str, *, enabled: bool) -> bool:
        before = kb_id in self.on
        self.on = (self.on | {kb_id}) if enabled else (self.on - {kb_id})
        return before

    async def add(self, kb_id: str, chunks: Sequence[ChunkGraph]) -> int:
        raise NotImplementedError

    async def forget_document(self, document_id: str) -> None:
        raise NotImplementedError

    async def chunks_mentioning(self, kb_ids: Sequence[str], keys: Sequence[str], limit: int) -> dict[str, list[str]]:
        self.asked.extend(keys)
        return {key: [c for kb in kb_ids for c in self.mentions.get(kb, {}).get(key, [])][:limit] for key in keys}

    async def related(self, kb_ids: Sequence[str], keys: Sequence[str], limit: int) -> list[str]:
        ends = [b if a in keys else a for a, b in self.relations if a in keys or b in keys]
        return [key for key in dict.fromkeys(ends) if key not in keys][:limit]

    async def mentions_among(
        self, kb_ids: Sequence[str], keys: Sequence[str], chunk_ids: Sequence[str]
    ) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for kb in kb_ids:
            for key in keys:
                for chunk in self.mentions.get(kb, {}).get(key, []):
                    if chunk in chunk_ids:
                        found.setdefault(chunk, set()).add(key)
        return found


class Chunks:
    """Every id is a chunk of the knowledge base its id starts with."""

    async def chunk_candidates(
        self, scored: Sequence[tuple[str, float]], legs: Mapping[str, frozenset[str]]
    ) -> list[Candidate]:
        return [Candidate(c, "chunk", c.split(":")[0], f"text {c}", score, legs[c]) for c, score in scored]


class ReplyingModel:
    """A chat model that answers every prompt with one fixed reply (or raises)."""

    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply
        self.prompts: list[Sequence[ChatMessage]] = []

    @property
    def model_id(self) -> str:
        return "fake"

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        self.prompts.append(messages)
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        yield await self.complete(messages)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


GRAPH = {"kb1": {"x200": ["kb1:a", "kb1:b"], "acme": ["kb1:b"]}, "kb2": {"x200": ["kb2:secret"]}}


async def test_only_bases_whose_graph_is_on_are_searched() -> None:
    graph = MemoryGraph(GRAPH, on={"kb1"})
    leg = EntitySearch(graph, Chunks(), RuleEntities())

    found = await leg.search(TurnContext("Does Acme make the X200?", ("kb1", "kb2")), [])

    assert [candidate.id for candidate in found] == ["kb1:b", "kb1:a"]
    assert all(candidate.legs == {"graph"} for candidate in found)


async def test_a_base_whose_graph_is_off_costs_one_switch_read_per_ttl() -> None:
    graph, clock = MemoryGraph(GRAPH, on=set()), Clock()
    leg = EntitySearch(graph, Chunks(), RuleEntities(), switches=GraphSwitches(graph, clock=clock))

    for _ in range(5):
        assert await leg.search(TurnContext("X200?", ("kb1",)), []) == []
    clock.now += SWITCH_TTL
    graph.on = {"kb1"}
    found = await leg.search(TurnContext("X200?", ("kb1",)), [])

    assert graph.switch_reads == 2
    assert [candidate.id for candidate in found] == ["kb1:a", "kb1:b"]


async def test_the_models_entities_are_searched() -> None:
    graph = MemoryGraph(GRAPH, on={"kb1"})
    model = ReplyingModel('{"nodes": [{"name": "acme", "attributes": ["maker"]}], "relations": []}')
    leg = EntitySearch(graph, Chunks(), ModelEntities(model))

    found = await leg.search(TurnContext("who makes that laptop x200", ("kb1",)), [])

    assert graph.asked == ["acme"]
    assert [candidate.id for candidate in found] == ["kb1:b"]
    assert model.prompts[0][-1].content == "who makes that laptop x200"


@pytest.mark.parametrize("reply", ["Acme and the X200.", ModelError("HTTP 500"), '{"nodes": [{"name": "Acme"'])
async def test_a_model_reply_that_is_not_json_falls_back_to_the_rules(
    reply: str | Exception, caplog: pytest.LogCaptureFixture
) -> None:
    graph = MemoryGraph(GRAPH, on={"kb1"})
    leg = EntitySearch(graph, Chunks(), ModelEntities(ReplyingModel(reply)))

    found = await leg.search(TurnContext("Does Acme make the X200?", ("kb1",)), [])

    assert graph.asked == ["acme", "x200"]
    assert [candidate.id for candidate in found] == ["kb1:b", "kb1:a"]
    assert len([record for record in caplog.records if record.levelname == "WARNING"]) == 1


async def test_a_question_naming_nothing_reads_no_mentions() -> None:
    graph = MemoryGraph(GRAPH, on={"kb1"})

    assert await EntitySearch(graph, Chunks(), RuleEntities()).search(TurnContext("how long?", ("kb1",)), []) == []
    assert graph.asked == []


async def test_a_switch_made_through_the_shared_switches_counts_at_once_in_this_process() -> None:
    graph = MemoryGraph(GRAPH, on=set())
    switches = GraphSwitches(graph, clock=Clock())
    leg = EntitySearch(graph, Chunks(), RuleEntities(), switches=switches)
    assert await leg.search(TurnContext("X200?", ("kb1",)), []) == []

    await switches.switch("kb1", enabled=True)
    assert [candidate.id for candidate in await leg.search(TurnContext("X200?", ("kb1",)), [])] == ["kb1:a", "kb1:b"]
    await switches.switch("kb1", enabled=False)
    assert await leg.search(TurnContext("X200?", ("kb1",)), []) == []


async def test_a_question_naming_many_things_reads_only_the_first_few() -> None:
    graph = MemoryGraph(GRAPH, on={"kb1"})
    question = " ".join(f"Model{n}." for n in range(30))

    await EntitySearch(graph, Chunks(), RuleEntities(), EntityLimits(entities=8)).search(
        TurnContext(question, ("kb1",)), []
    )

    assert graph.asked == [f"model{n}" for n in range(8)]


async def test_chunks_of_a_related_entity_join_after_the_direct_ones_capped() -> None:
    mentions = {
        "kb1": {
            "falcon": ["kb1:lead"],
            "dana": ["kb1:lead", *(f"kb1:dana{n}" for n in range(30))],
            "oslo": ["kb1:office"],
        }
    }
    graph = MemoryGraph(mentions, on={"kb1"}, relations=[("falcon", "dana"), ("oslo", "falcon")])
    leg = EntitySearch(
        graph, Chunks(), ModelEntities(ReplyingModel('{"nodes": [{"name": "Falcon"}]}')), EntityLimits(hop=4)
    )

    found = await leg.search(TurnContext("Who approves travel for Falcon?", ("kb1",)), [])

    ids = [candidate.id for candidate in found]
    assert ids == ["kb1:lead", "kb1:dana0", "kb1:office", "kb1:dana1", "kb1:dana2"]
    assert [c.score for c in found] == sorted((c.score for c in found), reverse=True)
    assert all(candidate.legs == frozenset({"graph"}) for candidate in found)


async def test_no_relation_means_no_second_read() -> None:
    graph = MemoryGraph(GRAPH, on={"kb1"})
    await EntitySearch(graph, Chunks(), RuleEntities()).search(TurnContext("Is the X200 any good?", ("kb1",)), [])

    assert graph.asked == ["x200"]
