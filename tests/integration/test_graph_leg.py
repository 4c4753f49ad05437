"""The entity leg in the running service, on the relational graph store and on Neo4j (NEO4J_URI): `/graph on` reads
the documents held, answers search it, off stops it; a Neo4j gone mid-turn costs the leg, not the answer."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bot.commands.registry import parse_command
from bot.types import ConversationKey, IncomingMessage, UserRef
from fakes.openai_api import FakeOpenAI
from harness.neo4j import Neo4jServer, running_neo4j
from rag.graph.leg import EntitySearch
from rag.graph.question import RuleEntities
from rag.graph.reply import CHUNK_EXTRACTION_PROMPT
from rag.ingest.documents import SourceFile
from rag.pipeline import TurnContext
from storage.graph.neo4j import Neo4jGraph
from storage.repos.graph import GraphRepo
from tests.conftest import EmbeddedSettings
from tests.security.ingest_support import ADMIN, CHAT_A, CHAT_B, PERSON, World, running_world
from tests.support.chat import RecordingTarget
from tests.support.drills import model_env
from tests.support.graphs import GRAPH_STORES

# Shares no word with the question but the name, so only the entity leg can bring it.
GARAGE = "# Garage\n\nThe Marigold structure closes for repainting each August; its lifts stay out of service then."


@pytest.fixture(params=GRAPH_STORES)
def graph_store(request: pytest.FixtureRequest) -> dict[str, str]:
    """The graph store's settings: none for the relational one, NEO4J_URI naming the session's Neo4j for `neo4j`."""
    if request.param == "sql":
        return {}
    return {"NEO4J_URI": request.getfixturevalue("neo4j_server").uri}


@pytest_asyncio.fixture
async def world(
    tmp_path: Path, embedded_settings: EmbeddedSettings, graph_store: dict[str, str]
) -> AsyncIterator[World]:
    async with running_world(tmp_path / "data", embedded_settings, **graph_store) as running:
        expected = Neo4jGraph if graph_store else GraphRepo
        assert isinstance(running.services.graph, expected)
        yield running


async def _shown(world: World, text: str, key: ConversationKey, user: UserRef = ADMIN) -> str:
    """What the command's sender reads in the end: its messages as last edited."""
    target = RecordingTarget()
    await world.manager.handle(IncomingMessage(key, "", user, text, command=parse_command(text)), target)
    edited = dict(target.edits)
    return "\n".join(edited.get(f"sent-{n}", sent) for n, sent in enumerate(target.sent, 1))


async def _graph_found(world: World, question: str, kb_id: str) -> list[str]:
    turn = await world.services.answerer.search.run(TurnContext(question, (kb_id,)))
    return [candidate.text for candidate in turn.candidates if "graph" in candidate.legs]


async def test_graph_on_reads_the_documents_held_and_answers_search_the_names_they_mention(world: World) -> None:
    bravo = world.bravo
    assert await _graph_found(world, "Where is Marigold?", bravo.id) == []

    said = await _shown(world, "/graph on", CHAT_B)

    assert "documents read: 1" in said
    assert any("Marigold garage" in text for text in await _graph_found(world, "Where is Marigold?", bravo.id))


async def test_documents_ingested_after_graph_on_are_read_at_ingestion_and_graph_off_stops_the_leg(
    world: World,
) -> None:
    services, bravo = world.services, world.bravo
    await world.command("/graph on", key=CHAT_B)
    await services.ingestor.ingest(bravo, SourceFile(GARAGE.encode(), "upload:garage.md"))

    found = await _graph_found(world, "How long is Marigold shut?", bravo.id)
    assert any("repainting" in text for text in found)

    assert "off" in await world.command("/graph off", key=CHAT_B)
    assert await _graph_found(world, "How long is Marigold shut?", bravo.id) == []
    # Another instance trusts the switch it read for 10 s at most; one that reads it now sees it off.
    other = EntitySearch(services.graph, services.answerer.parts.retriever, RuleEntities())
    assert await other.search(TurnContext("How long is Marigold shut?", (bravo.id,)), []) == []


async def test_only_an_admin_switches_the_graph_and_only_of_the_chats_own_base(world: World) -> None:
    refused = await _shown(world, "/graph on", CHAT_A, PERSON)

    assert "documents read" not in refused
    assert await world.services.graph.enabled([world.alpha.id, world.bravo.id]) == set()
    await world.command("/graph on", key=CHAT_A)
    assert await world.services.graph.enabled([world.alpha.id, world.bravo.id]) == {world.alpha.id}


@pytest_asyncio.fixture
async def own_neo4j(neo4j_home: Path) -> AsyncIterator[Neo4jServer]:
    """A Neo4j of this test's own, since the test stops it."""
    async with running_neo4j(neo4j_home) as server:
        yield server


async def test_a_neo4j_gone_mid_turn_costs_the_entity_leg_with_one_log_line_and_the_answer_comes_from_the_others(
    tmp_path: Path, embedded_settings: EmbeddedSettings, own_neo4j: Neo4jServer, caplog: pytest.LogCaptureFixture
) -> None:
    async with running_world(tmp_path / "data", embedded_settings, NEO4J_URI=own_neo4j.uri) as world:
        await world.command("/graph on", key=CHAT_B)
        question = "Where do visitors park at Marigold?"
        assert any("Marigold garage" in text for text in await _graph_found(world, question, world.bravo.id))

        await own_neo4j.stop()
        caplog.clear()
        turn = await world.services.answerer.search.run(TurnContext(question, (world.bravo.id,)))
        answered = await world.ask(question)

        assert any("Marigold garage" in candidate.text for candidate in turn.candidates)
        assert not any("graph" in candidate.legs for candidate in turn.candidates)
        assert "Marigold garage" in "\n".join(answered.replies())
        failed = [r for r in caplog.records if r.levelno >= logging.WARNING]
        # One line a turn: this search's and the answer's.
        assert [r.getMessage().split(":")[0] for r in failed] == ["search leg graph failed, answering without it"] * 2


def _extraction(body: dict[str, Any]) -> str:
    """The fake model's reading of a chunk in the seed's shape (by what the chunk says); other prompts get prose."""
    system, text = body["messages"][0]["content"], body["messages"][-1]["content"]
    if system != CHUNK_EXTRACTION_PROMPT:
        return "Dana Whitfield approves it."
    nodes = [{"name": name} for name in ("Project Falcon", "Dana Whitfield") if name in text]
    relations = [{"node1": "Project Falcon", "node2": "Dana Whitfield", "type": "led by"}] if "led by" in text else []
    return json.dumps({"nodes": nodes, "relations": relations})


async def test_with_model_extraction_graph_on_and_ingestion_store_relations_and_answers_walk_one_hop(
    tmp_path: Path, embedded_settings: EmbeddedSettings, graph_store: dict[str, str]
) -> None:
    async with FakeOpenAI() as model:
        model.reply_for = _extraction
        settings = model_env(model, GRAPH_MODEL_EXTRACTION=True, **graph_store)
        async with running_world(tmp_path / "data", embedded_settings, **settings) as world:
            services, bravo = world.services, world.bravo
            lead = SourceFile(b"# Falcon\n\nProject Falcon is led by Dana Whitfield.", "upload:falcon.md")
            await services.ingestor.ingest(bravo, lead)
            # `/graph on` reads the documents held with the model; one ingested later is read with it too.
            assert "documents read: 2" in await _shown(world, "/graph on", CHAT_B)
            travel = SourceFile(b"# Travel\n\nDana Whitfield approves all travel.", "upload:travel.md")
            await services.ingestor.ingest(bravo, travel)

            assert await services.graph.related([bravo.id], ["project falcon"], 10) == ["dana whitfield"]
            found = await _graph_found(world, "Who approves travel for Project Falcon?", bravo.id)
            # The travel chunk names no Falcon: the entity leg brings it through the relation (the order among the
            # candidates is the fused one; the leg's own order is the contract test's).
            assert any("led by Dana Whitfield" in text for text in found)
            assert any("approves all travel" in text for text in found)
