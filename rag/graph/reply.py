"""A chat model's entity extraction of a question: the seed's prompt shape, and its reply read leniently."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from rag.graph.entities import Entity, Extraction, Relation, entity_key

log = logging.getLogger(__name__)

# The seed's shape: nodes with attributes, relations between two nodes, JSON only.
EXTRACTION_PROMPT: Final = """Extract the entities (people, places, organisations, products, models, standards, \
terms) that the question names, and the relations between them the question states.
Answer with JSON only, in this shape:
{"nodes": [{"name": "...", "attributes": ["..."]}], "relations": [{"node1": "...", "node2": "...", "type": "..."}]}
Use each name as the question writes it. With no entity, answer {"nodes": [], "relations": []}."""
# The same shape for a passage at ingestion: its relations are what the entity leg walks from a question's entities.
CHUNK_EXTRACTION_PROMPT: Final = """Extract the entities (people, places, organisations, products, models, \
standards, terms) that the passage names, and the relations between them the passage states.
Answer with JSON only, in this shape:
{"nodes": [{"name": "...", "attributes": ["..."]}], "relations": [{"node1": "...", "node2": "...", "type": "..."}]}
Use each name as the passage writes it. With no entity, answer {"nodes": [], "relations": []}."""

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
# What the model may say; more is a model gone astray, not a question's entities.
_MOST_NODES: Final = 32


def parse_extraction(reply: str, *, quiet: bool = False) -> Extraction | None:
    """The reply's entities and relations; None when it is not JSON of that shape (the caller falls back to rules).

    `quiet` leaves the log line to the caller (ingestion logs one per batch, not one per chunk).
    """
    fenced = _FENCE.search(reply)
    try:
        data = json.loads(fenced.group(1) if fenced else reply.strip())
    except ValueError:
        if not quiet:
            log.warning("graph extraction reply is not JSON (%d chars); using the rule extractor", len(reply))
        return None
    # The seed's older shape is one list mixing entities and relations; accept it as well as the object.
    items = data if isinstance(data, list) else None
    if isinstance(data, dict):
        items = [*_list(data.get("nodes")), *_list(data.get("relations"))]
    if items is None:
        if not quiet:
            log.warning("graph extraction reply is JSON but neither an object nor a list; using the rule extractor")
        return None
    entities = {entity.key: entity for entity in _entities(items) if entity.key}
    relations = tuple(_relations(items))
    return Extraction(tuple(entities.values())[:_MOST_NODES], relations)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _entities(items: list[Any]) -> Iterator[Entity]:
    for item in items:
        if not isinstance(item, Mapping):
            continue
        name = item.get("name", item.get("entity"))
        if isinstance(name, str) and name.strip():
            attributes = item.get("attributes", item.get("entity_attributes", []))
            yield Entity(name.strip(), "model", tuple(str(a) for a in _list(attributes)))


def _relations(items: list[Any]) -> Iterator[Relation]:
    for item in items:
        if not isinstance(item, Mapping):
            continue
        source, target = item.get("node1", item.get("entity1")), item.get("node2", item.get("entity2"))
        kind = item.get("type", item.get("relation", ""))
        if isinstance(source, str) and isinstance(target, str) and entity_key(source) and entity_key(target):
            yield Relation(source.strip(), target.strip(), str(kind))
