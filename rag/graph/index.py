"""Reading chunks into the graph: their entities by rule, or with a model their entities and relations; stored in one
batch per call."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rag.errors import ModelError
from rag.graph.entities import Entity, Extraction, entity_key, extract_entities
from rag.graph.port import GraphStore
from rag.graph.reply import CHUNK_EXTRACTION_PROMPT, parse_extraction
from rag.ports import ChatModel
from rag.types import ChatMessage
from storage.records import ChunkGraph, ChunkRecord, GraphEntityRecord, GraphRelationRecord

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ModelExtraction:
    """How chunks are read with the chat model (GRAPH_MODEL_EXTRACTION): a call per chunk."""

    model: ChatModel
    # Calls in flight for one batch: an ingestion of a thousand chunks must not open a thousand requests at once.
    concurrency: int = 4
    # Seconds one chunk's call may take before that chunk is read by rule instead.
    timeout: float = 30.0


def entity_record(entity: Entity) -> GraphEntityRecord:
    """The entity as the graph stores it."""
    return GraphEntityRecord(entity.key, entity.name, entity.label, entity.attributes)


def chunk_graph(chunk: ChunkRecord, extraction: Extraction) -> ChunkGraph | None:
    """What the chunk mentions and the relations read from it; None when it names nothing.

    A relation's two ends count as mentioned by the chunk even where the model left them out of its nodes, so the
    walk from one end reaches the chunks of the other.
    """
    entities = {entity.key: entity_record(entity) for entity in extraction.entities if entity.key}
    relations = []
    for relation in extraction.relations:
        source, target = entity_key(relation.source), entity_key(relation.target)
        if source == target:
            continue
        for key, name in ((source, relation.source), (target, relation.target)):
            entities.setdefault(key, GraphEntityRecord(key, name, "model"))
        relations.append(GraphRelationRecord(source, target, relation.relation))
    if not entities:
        return None
    return ChunkGraph(chunk.document_id, chunk.chunk_id, tuple(entities.values()), tuple(dict.fromkeys(relations)))


def chunk_graphs(chunks: Sequence[ChunkRecord]) -> list[ChunkGraph]:
    """Each chunk's entities by rule (chunks that name none are left out)."""
    graphs = (chunk_graph(chunk, Extraction(extract_entities(chunk.text))) for chunk in chunks)
    return [graph for graph in graphs if graph is not None]


class GraphIndexer:
    """Puts the entities of a knowledge base's new chunks into its graph, when its graph is switched on."""

    def __init__(self, store: GraphStore, model: ModelExtraction | None = None) -> None:
        self._store = store
        self._model = model

    async def index(self, kb_id: str, chunks: Sequence[ChunkRecord]) -> int:
        """Store the chunks' entities (and relations) if the base's graph is on; returns the mentions stored."""
        if not chunks or kb_id not in await self._store.enabled([kb_id]):
            return 0
        if self._model is None:
            # jieba's tagger takes a few ms a chunk: off the event loop.
            graphs = await asyncio.to_thread(chunk_graphs, chunks)
        else:
            graphs = await self._read_with_model(self._model, chunks)
        mentions = await self._store.add(kb_id, graphs)
        relations = sum(len(graph.relations) for graph in graphs)
        log.info("graph=indexed kb=%s chunks=%d mentions=%d relations=%d", kb_id, len(chunks), mentions, relations)
        return mentions

    async def _read_with_model(self, model: ModelExtraction, chunks: Sequence[ChunkRecord]) -> list[ChunkGraph]:
        gate = asyncio.Semaphore(model.concurrency)
        failures: Counter[str] = Counter()

        async def read(chunk: ChunkRecord) -> ChunkGraph | None:
            async with gate:
                extraction, failure = await _ask(model, chunk.text)
            if extraction is None:
                failures[failure] += 1
                extraction = Extraction(await asyncio.to_thread(extract_entities, chunk.text))
            return chunk_graph(chunk, extraction)

        graphs = await asyncio.gather(*(read(chunk) for chunk in chunks))
        if failures:
            # One line a batch: a model down for an ingestion of a thousand chunks is one fact, not a thousand.
            reasons = " ".join(f"{reason}={count}" for reason, count in sorted(failures.items()))
            log.warning("graph extraction=rules chunks=%d of %d %s", failures.total(), len(chunks), reasons)
        return [graph for graph in graphs if graph is not None]


async def _ask(model: ModelExtraction, text: str) -> tuple[Extraction | None, str]:
    """The model's reading of one chunk, or None and why it is unusable."""
    messages = [ChatMessage("system", CHUNK_EXTRACTION_PROMPT), ChatMessage("user", text)]
    try:
        async with asyncio.timeout(model.timeout):
            reply = await model.model.complete(messages)
    except TimeoutError:
        return None, "timeout"
    except ModelError:
        return None, "model_error"
    extraction = parse_extraction(reply, quiet=True)
    return extraction, "" if extraction is not None else "not_json"
