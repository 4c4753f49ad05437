"""The entity graph in Neo4j: (:Entity {kb_id, key, name}) nodes, (:Chunk {id, kb_id, document_id}) nodes and
MENTIONS edges from chunks to entities, RELATES edges between entities; each base's switch stays in SQL.

SQL is the truth of which chunks are live: a read returns only chunks a live document version holds (asked of SQL),
so a replaced or deleted document's chunks never come back even while the graph still holds them. The relational
repositories tell the graph what they drop (GraphMirror), so it does not keep them long either.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, LiteralString

from neo4j import READ_ACCESS, AsyncDriver, AsyncGraphDatabase, Query, RoutingControl
from neo4j.exceptions import DriverError, Neo4jError

from storage.errors import StorageError, first_line
from storage.graph.config import Neo4jConfig
from storage.records import ChunkGraph
from storage.repos.graph import GraphRepo

log = logging.getLogger(__name__)

LiveChunks = Callable[[Sequence[str]], Awaitable[set[str]]]
"""Those of the given chunk ids a live document version holds (storage.repos.documents.DocumentRepo's)."""

# As the relational store cuts them: two names sharing their first 256 characters are one entity.
_NAME_LENGTH = 256
# Rows one statement carries: a transaction of a few hundred MERGEs stays well under Neo4j's default memory limits.
_ROWS_PER_STATEMENT = 500
# Nodes one delete transaction removes: a base of a million chunks goes in bounded transactions.
_DELETES_PER_TRANSACTION = 10_000
# Reads of one entity's mentions while some of them turn out not live: each round skips those, so a document
# replaced a moment ago (its old mentions not yet forgotten) costs a round, never the leg.
_LIVE_ROUNDS = 3

_SCHEMA: tuple[LiteralString, ...] = (
    "CREATE CONSTRAINT ragbot_entity IF NOT EXISTS FOR (e:Entity) REQUIRE (e.kb_id, e.key) IS UNIQUE",
    "CREATE CONSTRAINT ragbot_chunk IF NOT EXISTS FOR (c:Chunk) REQUIRE c.id IS UNIQUE",
    "CREATE INDEX ragbot_chunk_document IF NOT EXISTS FOR (c:Chunk) ON (c.document_id)",
    "CREATE INDEX ragbot_chunk_kb IF NOT EXISTS FOR (c:Chunk) ON (c.kb_id)",
    "CREATE INDEX ragbot_entity_kb IF NOT EXISTS FOR (e:Entity) ON (e.kb_id)",
    "CREATE INDEX ragbot_relates_document IF NOT EXISTS FOR ()-[r:RELATES]-() ON (r.document_id)",
)
_ADD_MENTIONS: LiteralString = """
UNWIND $rows AS row
MERGE (e:Entity {kb_id: $kb_id, key: row.key})
  ON CREATE SET e.name = row.name, e.label = row.label, e.attributes = row.attributes
MERGE (c:Chunk {id: row.chunk_id})
  ON CREATE SET c.kb_id = $kb_id, c.document_id = row.document_id
MERGE (c)-[:MENTIONS]->(e)
"""
_ADD_RELATIONS: LiteralString = """
UNWIND $rows AS row
MERGE (s:Entity {kb_id: $kb_id, key: row.source})
MERGE (t:Entity {kb_id: $kb_id, key: row.target})
MERGE (s)-[:RELATES {relation: row.relation, document_id: row.document_id}]->(t)
"""
# Every entity of the question in one round trip. Each one's node per base is reached by the (kb_id, key) constraint's
# index and its MENTIONS walked until LIMIT, so an entity a hundred thousand chunks mention costs what one `limit`
# chunks mention does. `skip` holds the chunks already read for that entity (a later round's reads go past them).
MENTIONING: LiteralString = """
UNWIND $wants AS want
CALL (want) {
  MATCH (e:Entity {key: want.key}) WHERE e.kb_id IN $kb_ids
  MATCH (c:Chunk)-[:MENTIONS]->(e)
  WHERE NOT c.id IN want.skip
  RETURN c.id AS chunk_id
  LIMIT $limit
}
RETURN want.key AS key, chunk_id
"""
# From each chunk by its id (a chunk mentions a few entities), never from the entities (one may have 100,000 mentions).
_MENTIONS_AMONG: LiteralString = """
UNWIND $chunk_ids AS chunk_id
MATCH (c:Chunk {id: chunk_id})-[:MENTIONS]->(e:Entity)
WHERE e.kb_id IN $kb_ids AND e.key IN $keys
RETURN c.id AS chunk_id, e.key AS key
"""
# Each of the question's entities' relations in both directions, reached from its node by the (kb_id, key) index and
# stopped at LIMIT, so a hub related to thousands costs `limit` rows.
_RELATED: LiteralString = """
UNWIND $keys AS key
CALL (key) {
  MATCH (e:Entity {key: key}) WHERE e.kb_id IN $kb_ids
  MATCH (e)-[:RELATES]-(other:Entity)
  WHERE other.kb_id = e.kb_id AND NOT other.key IN $keys
  RETURN DISTINCT other.key AS related
  LIMIT $limit
}
RETURN related
"""
_FORGET_CHUNKS: LiteralString = "MATCH (c:Chunk) WHERE c.id IN $chunk_ids DETACH DELETE c"
_FORGET_DOCUMENT_CHUNKS: LiteralString = """
MATCH (c:Chunk {document_id: $document_id}) WITH c LIMIT $batch DETACH DELETE c RETURN count(*) AS gone
"""
_FORGET_DOCUMENT_RELATIONS: LiteralString = """
MATCH ()-[r:RELATES {document_id: $document_id}]->() WITH r LIMIT $batch DELETE r RETURN count(*) AS gone
"""
_FORGET_KB_CHUNKS: LiteralString = """
MATCH (c:Chunk {kb_id: $kb_id}) WITH c LIMIT $batch DETACH DELETE c RETURN count(*) AS gone
"""
_FORGET_KB_ENTITIES: LiteralString = """
MATCH (e:Entity {kb_id: $kb_id}) WITH e LIMIT $batch DETACH DELETE e RETURN count(*) AS gone
"""


class GraphUnavailable(StorageError):
    """The Neo4j server refused or did not answer."""


class Neo4jGraph:
    """The graph store over a Neo4j server through the official async driver; switches are the relational ones."""

    def __init__(self, config: Neo4jConfig, switches: GraphRepo, live: LiveChunks) -> None:
        self._config = config
        self._switches = switches
        self._live = live
        auth = (config.user, config.password or "") if config.user else None
        self._driver: AsyncDriver = AsyncGraphDatabase.driver(
            config.uri,
            auth=auth,
            connection_timeout=config.connection_timeout,
            # Writes are retried this long (the driver's default is 30 s): an ingestion's graph waits out a restart.
            max_transaction_retry_time=config.query_timeout,
        )

    async def start(self) -> None:
        """Check the server answers and create the constraints and indexes the reads and writes rely on."""
        try:
            await self._driver.verify_connectivity()
        except (DriverError, Neo4jError) as exc:
            raise GraphUnavailable(f"neo4j {self._config.uri} unavailable: {first_line(exc)}") from exc
        for statement in _SCHEMA:
            await self._write(statement)

    async def close(self) -> None:
        """Close the driver's connections."""
        await self._driver.close()

    async def enabled(self, kb_ids: Sequence[str]) -> set[str]:
        """Those of `kb_ids` whose graph is switched on (kept in SQL)."""
        return await self._switches.enabled(kb_ids)

    async def switch(self, kb_id: str, *, enabled: bool) -> bool:
        """Switch the knowledge base's graph on or off (in SQL); returns whether it was on before."""
        return await self._switches.switch(kb_id, enabled=enabled)

    async def add(self, kb_id: str, chunks: Sequence[ChunkGraph]) -> int:
        """Store the chunks' entities, mentions and relations (ones already stored stay); returns the mentions."""
        mentions = list({(row["key"], row["chunk_id"]): row for row in _mention_rows(chunks)}.values())
        relations = list(_relation_rows(chunks))
        for statement, rows in ((_ADD_MENTIONS, mentions), (_ADD_RELATIONS, relations)):
            for start in range(0, len(rows), _ROWS_PER_STATEMENT):
                await self._write(statement, kb_id=kb_id, rows=rows[start : start + _ROWS_PER_STATEMENT])
        return len(mentions)

    async def chunks_mentioning(self, kb_ids: Sequence[str], keys: Sequence[str], limit: int) -> dict[str, list[str]]:
        """Per folded name, up to `limit` live chunks of `kb_ids` that mention it."""
        by_key = {key[:_NAME_LENGTH]: key for key in keys}
        live: dict[str, list[str]] = {key: [] for key in by_key}
        read: dict[str, list[str]] = {key: [] for key in by_key}
        short = list(by_key)
        for _ in range(_LIVE_ROUNDS):
            want = max(limit - len(live[key]) for key in short)
            wants = [{"key": key, "skip": read[key]} for key in short]
            found: dict[str, list[str]] = {key: [] for key in short}
            for record in await self._read(MENTIONING, wants=wants, kb_ids=list(kb_ids), limit=want):
                found[record["key"]].append(record["chunk_id"])
            held = await self._live([chunk for chunks in found.values() for chunk in chunks])
            for key, chunks in found.items():
                read[key].extend(chunks)
                live[key].extend(chunk for chunk in chunks if chunk in held)
            # An entity is done once it has `limit` live chunks or its mentions ran out.
            short = [key for key in short if len(live[key]) < limit and len(found[key]) == want]
            if not short:
                break
        return {by_key[key]: chunks[:limit] for key, chunks in live.items()}

    async def mentions_among(
        self, kb_ids: Sequence[str], keys: Sequence[str], chunk_ids: Sequence[str]
    ) -> dict[str, set[str]]:
        """Per chunk of `chunk_ids`, which of the folded names `keys` it mentions."""
        found: dict[str, set[str]] = {}
        by_key = {key[:_NAME_LENGTH]: key for key in keys}
        if not by_key or not chunk_ids:
            return found
        for start in range(0, len(chunk_ids), _ROWS_PER_STATEMENT):
            records = await self._read(
                _MENTIONS_AMONG,
                chunk_ids=list(chunk_ids[start : start + _ROWS_PER_STATEMENT]),
                kb_ids=list(kb_ids),
                keys=list(by_key),
            )
            for record in records:
                found.setdefault(record["chunk_id"], set()).add(by_key[record["key"]])
        return found

    async def related(self, kb_ids: Sequence[str], keys: Sequence[str], limit: int) -> list[str]:
        """Up to `limit` folded names of `kb_ids`' entities one relation away from those of `keys` (not in `keys`)."""
        wanted = list(dict.fromkeys(key[:_NAME_LENGTH] for key in keys))
        if not wanted or not kb_ids or limit <= 0:
            return []
        records = await self._read(_RELATED, keys=wanted, kb_ids=list(kb_ids), limit=limit)
        return list(dict.fromkeys(record["related"] for record in records))[:limit]

    async def forget_chunks(self, chunk_ids: Sequence[str]) -> None:
        """Remove these chunks and their mentions."""
        for start in range(0, len(chunk_ids), _DELETES_PER_TRANSACTION):
            await self._write(_FORGET_CHUNKS, chunk_ids=list(chunk_ids[start : start + _DELETES_PER_TRANSACTION]))

    async def forget_document(self, document_id: str) -> None:
        """Remove the document's chunks, what they mention and the relations read from it."""
        await self._drain((_FORGET_DOCUMENT_CHUNKS, _FORGET_DOCUMENT_RELATIONS), document_id=document_id)

    async def forget_kb(self, kb_id: str) -> None:
        """Remove the knowledge base's chunks and entities with every edge between them."""
        await self._drain((_FORGET_KB_CHUNKS, _FORGET_KB_ENTITIES), kb_id=kb_id)

    async def _drain(self, statements: Sequence[LiteralString], **parameters: Any) -> None:
        """Run each batched delete, in order, until it removes nothing more."""
        for statement in statements:
            while True:
                records = await self._write(statement, batch=_DELETES_PER_TRANSACTION, **parameters)
                if not records or not records[0]["gone"]:
                    break

    async def _read(self, statement: LiteralString, **parameters: Any) -> list[Any]:
        # An auto-commit transaction, which the driver does not retry: a server gone mid-turn costs the turn's leg one
        # refused connection, not a retry window.
        try:
            async with self._driver.session(database=self._config.database, default_access_mode=READ_ACCESS) as session:
                result = await session.run(Query(statement, timeout=self._config.query_timeout), parameters)
                return [record async for record in result]
        except (DriverError, Neo4jError) as exc:
            raise GraphUnavailable(f"neo4j: {first_line(exc)}") from exc

    async def _write(self, statement: LiteralString, **parameters: Any) -> list[Any]:
        # A managed transaction: the driver retries it through a leader change or a dropped connection.
        try:
            result = await self._driver.execute_query(
                Query(statement, timeout=self._config.query_timeout),
                parameters,
                database_=self._config.database,
                routing_=RoutingControl.WRITE,
            )
        except (DriverError, Neo4jError) as exc:
            raise GraphUnavailable(f"neo4j: {first_line(exc)}") from exc
        return list(result.records)


def _mention_rows(chunks: Sequence[ChunkGraph]) -> Iterator[dict[str, Any]]:
    for chunk in chunks:
        for entity in chunk.entities:
            yield {
                "key": entity.key[:_NAME_LENGTH],
                "name": entity.name[:_NAME_LENGTH],
                "label": entity.label[:64],
                "attributes": list(entity.attributes),
                "chunk_id": chunk.chunk_id,
                "document_id": chunk.document_id,
            }


def _relation_rows(chunks: Sequence[ChunkGraph]) -> Iterator[dict[str, Any]]:
    for chunk in chunks:
        for relation in chunk.relations:
            yield {
                "source": relation.source[:_NAME_LENGTH],
                "target": relation.target[:_NAME_LENGTH],
                "relation": relation.relation[:128],
                "document_id": chunk.document_id,
            }
