"""The graph stores the contract tests run on, the relational one and Neo4j, with what each holds read back."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, LiteralString

from neo4j import AsyncDriver, AsyncGraphDatabase
from sqlalchemy import func, insert
from sqlmodel import col, select

from storage.db import Database
from storage.graph.config import Neo4jConfig
from storage.graph.neo4j import Neo4jGraph
from storage.models import GraphEdge, GraphMention, GraphNode
from storage.repos.documents import DocumentRepo
from storage.repos.graph import GraphRepo, node_id
from storage.repos.knowledge_bases import KnowledgeBaseRepo

GRAPH_STORES = ("sql", "neo4j")
_BULK_ROWS = 10_000


@dataclass(slots=True)
class GraphBackend:
    """One graph store over one database, with the repositories that tell it what SQL drops."""

    name: str
    db: Database
    store: GraphRepo | Neo4jGraph
    documents: DocumentRepo
    knowledge_bases: KnowledgeBaseRepo
    driver: AsyncDriver | None = None

    async def mentioned(self, *, kb_id: str | None = None, document_id: str | None = None) -> set[str]:
        """The chunk ids the graph holds a mention of, in the base or of the document."""
        if self.driver is None:
            statement = select(GraphMention.chunk_id)
            if kb_id is not None:
                statement = statement.where(col(GraphMention.kb_id) == kb_id)
            if document_id is not None:
                statement = statement.where(col(GraphMention.document_id) == document_id)
            async with self.db.session() as session:
                return set((await session.exec(statement)).all())
        rows = await self.cypher(
            "MATCH (c:Chunk)-[:MENTIONS]->(:Entity) WHERE ($kb_id IS NULL OR c.kb_id = $kb_id)"
            " AND ($document_id IS NULL OR c.document_id = $document_id) RETURN DISTINCT c.id AS id",
            kb_id=kb_id,
            document_id=document_id,
        )
        return {row["id"] for row in rows}

    async def entities(self, kb_id: str) -> int:
        """How many entities the base's graph holds."""
        if self.driver is None:
            return await self._count(GraphNode, col(GraphNode.kb_id) == kb_id)
        rows = await self.cypher("MATCH (e:Entity {kb_id: $kb_id}) RETURN count(e) AS n", kb_id=kb_id)
        return int(rows[0]["n"])

    async def relations(self, document_id: str) -> int:
        """How many relations read from the document the graph holds."""
        if self.driver is None:
            return await self._count(GraphEdge, col(GraphEdge.document_id) == document_id)
        rows = await self.cypher(
            "MATCH ()-[r:RELATES {document_id: $document_id}]->() RETURN count(r) AS n", document_id=document_id
        )
        return int(rows[0]["n"])

    async def bulk_mentions(self, kb_id: str, document_id: str, key: str, chunk_ids: Sequence[str]) -> None:
        """Each of `chunk_ids` (rows SQL holds) mentions the entity `key`, written in bulk."""
        for start in range(0, len(chunk_ids), _BULK_ROWS):
            batch = list(chunk_ids[start : start + _BULK_ROWS])
            if self.driver is None:
                await self._bulk_sql(kb_id, document_id, key, batch, first=start == 0)
            else:
                await self.cypher(
                    "MERGE (e:Entity {kb_id: $kb_id, key: $key}) WITH e UNWIND $ids AS id"
                    " CREATE (c:Chunk {id: id, kb_id: $kb_id, document_id: $document_id})-[:MENTIONS]->(e)",
                    kb_id=kb_id,
                    key=key,
                    document_id=document_id,
                    ids=batch,
                )

    async def cypher(self, statement: LiteralString, **parameters: Any) -> list[Any]:
        """Run a statement on the test's Neo4j: its records."""
        assert self.driver is not None
        return list((await self.driver.execute_query(statement, parameters)).records)

    async def _bulk_sql(self, kb_id: str, document_id: str, key: str, batch: list[str], *, first: bool) -> None:
        node = node_id(kb_id, key)
        async with self.db.session() as session:
            connection = await session.connection()
            if first:
                await connection.execute(
                    insert(GraphNode), [{"id": node, "kb_id": kb_id, "name": key, "label": "", "attributes": []}]
                )
            await connection.execute(
                insert(GraphMention),
                [{"node_id": node, "chunk_id": c, "kb_id": kb_id, "document_id": document_id} for c in batch],
            )

    async def _count(self, model: Any, where: Any) -> int:
        async with self.db.session() as session:
            return int((await session.exec(select(func.count()).select_from(model).where(where))).one())


@asynccontextmanager
async def graph_backend(name: str, neo4j_uri: str | None, db: Database) -> AsyncIterator[GraphBackend]:
    """The relational graph store (`sql`), or a Neo4jGraph on the server at `neo4j_uri` (`neo4j`)."""
    if name == "sql":
        yield GraphBackend(name, db, GraphRepo(db), DocumentRepo(db), KnowledgeBaseRepo(db))
        return
    assert neo4j_uri is not None
    store = Neo4jGraph(Neo4jConfig(uri=neo4j_uri), GraphRepo(db), DocumentRepo(db).committed_chunk_ids)
    driver = AsyncGraphDatabase.driver(neo4j_uri, auth=None)
    try:
        await store.start()
        yield GraphBackend(
            name, db, store, DocumentRepo(db, graph=store), KnowledgeBaseRepo(db, graph=store), driver=driver
        )
    finally:
        await driver.close()
        await store.close()
