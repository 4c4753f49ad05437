"""The entity graph in the relational store: nodes, relations, mentions of nodes by chunks, and each base's switch.

A mention is read only while its chunk is live (joined to its document's live version, as every chunk read is), so a
replaced or deleted document's mentions drop out at once; their rows go with the chunk rows (DocumentWriter).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import col, delete, select

from storage.db import Database
from storage.errors import StorageError, first_line
from storage.models import Chunk, Document, GraphEdge, GraphMention, GraphNode, GraphSwitch, utcnow
from storage.records import ChunkGraph
from storage.repos.document_writes import ROWS_PER_TRANSACTION, live_chunk

_NODES = uuid.UUID("0b6f3c1e-5a52-4d7e-9a41-2f3d8c6e7b90")
# Rows one INSERT carries: far under SQLite's 32,766 bound parameters at 4 columns a row.
_ROWS_PER_STATEMENT = 500
# Names longer than the column are cut; two that share their first 256 characters are one entity.
_NAME_LENGTH = 256


def node_id(kb_id: str, key: str) -> str:
    """The node of the folded name `key` in the knowledge base: derived, so writers and readers need no lookup."""
    return str(uuid.uuid5(_NODES, f"{kb_id}|{key[:_NAME_LENGTH]}"))


class GraphRepo:
    """Writes what chunks mention and reads, boundedly, which live chunks mention given entities."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def enabled(self, kb_ids: Sequence[str]) -> set[str]:
        """Those of `kb_ids` whose graph is switched on."""
        if not kb_ids:
            return set()
        async with self._db.session() as session:
            statement = select(GraphSwitch.kb_id).where(
                col(GraphSwitch.kb_id).in_(list(kb_ids)), col(GraphSwitch.enabled)
            )
            return set((await session.exec(statement)).all())

    async def switch(self, kb_id: str, *, enabled: bool) -> bool:
        """Switch the knowledge base's graph on or off; returns whether it was on before."""
        async with self._db.session() as session:
            row = await session.get(GraphSwitch, kb_id)
            before = bool(row and row.enabled)
            if row is None:
                session.add(GraphSwitch(kb_id=kb_id, enabled=enabled))
            else:
                await session.exec(
                    update(GraphSwitch)
                    .where(col(GraphSwitch.kb_id) == kb_id)
                    .values(enabled=enabled, updated_at=utcnow())
                    .execution_options(synchronize_session=False)
                )
            return before

    async def add(self, kb_id: str, chunks: Sequence[ChunkGraph]) -> int:
        """Store the chunks' entities, mentions and relations (ones already stored stay); returns the mentions."""
        nodes = {row["id"]: row for row in _node_rows(kb_id, chunks)}
        mentions = {(row["node_id"], row["chunk_id"]): row for row in _mention_rows(kb_id, chunks)}
        edges = {row["id"]: row for row in _edge_rows(kb_id, chunks)}
        try:
            for model, rows in ((GraphNode, nodes), (GraphMention, mentions), (GraphEdge, edges)):
                await self._insert_new(model, list(rows.values()))
        except SQLAlchemyError as exc:
            raise StorageError(f"graph write failed: {first_line(exc)}") from exc
        return len(mentions)

    async def forget_document(self, document_id: str) -> None:
        """Remove what the document's chunks mention and the relations read from it (before a rebuild of it)."""
        async with self._db.session() as session:
            await session.exec(delete(GraphMention).where(col(GraphMention.document_id) == document_id))
            await session.exec(delete(GraphEdge).where(col(GraphEdge.document_id) == document_id))

    async def chunks_mentioning(self, kb_ids: Sequence[str], keys: Sequence[str], limit: int) -> dict[str, list[str]]:
        """Per folded name, up to `limit` live chunks of `kb_ids` that mention it.

        Each name's read walks its nodes' mentions in key order and stops at `limit`: an entity mentioned by a
        hundred thousand chunks costs what one mentioned by `limit` does.
        """
        found: dict[str, list[str]] = {}
        async with self._db.session() as session:
            for key in dict.fromkeys(keys):
                statement = mentioning([node_id(kb_id, key) for kb_id in kb_ids], kb_ids, limit)
                found[key] = list((await session.exec(statement)).all())
        return found

    async def mentions_among(
        self, kb_ids: Sequence[str], keys: Sequence[str], chunk_ids: Sequence[str]
    ) -> dict[str, set[str]]:
        """Per chunk of `chunk_ids`, which of the folded names `keys` it mentions."""
        by_node = {node_id(kb_id, key): key for kb_id in kb_ids for key in keys}
        found: dict[str, set[str]] = {}
        if not by_node or not chunk_ids:
            return found
        async with self._db.session() as session:
            for start in range(0, len(chunk_ids), _ROWS_PER_STATEMENT):
                statement = select(GraphMention.chunk_id, GraphMention.node_id).where(
                    col(GraphMention.node_id).in_(list(by_node)),
                    col(GraphMention.chunk_id).in_(list(chunk_ids[start : start + _ROWS_PER_STATEMENT])),
                )
                for chunk_id, node in (await session.exec(statement)).all():
                    found.setdefault(chunk_id, set()).add(by_node[node])
        return found

    async def related(self, kb_ids: Sequence[str], keys: Sequence[str], limit: int) -> list[str]:
        """Up to `limit` folded names of `kb_ids`' entities one relation away from those of `keys` (not in `keys`).

        Each direction is one read off the edges' source or target index, stopped at `limit`.
        """
        nodes = [node_id(kb_id, key) for kb_id in kb_ids for key in dict.fromkeys(keys)]
        if not nodes or limit <= 0:
            return []
        found: dict[str, None] = {}
        async with self._db.session() as session:
            for near, far in ((GraphEdge.source_id, GraphEdge.target_id), (GraphEdge.target_id, GraphEdge.source_id)):
                statement = (
                    select(GraphNode.name)
                    .join(GraphEdge, col(GraphNode.id) == col(far))
                    .where(
                        col(near).in_(nodes),
                        col(far).not_in(nodes),
                        col(GraphEdge.kb_id).in_(list(kb_ids)),
                    )
                    .distinct()
                    .limit(limit)
                )
                found.update(dict.fromkeys((await session.exec(statement)).all()))
        return list(found)[:limit]

    async def _insert_new(self, model: Any, rows: list[dict[str, Any]]) -> None:
        # Short transactions, so SQLite's one write lock is never held long (as DocumentWriter does).
        insert = sqlite.insert if self._db.config.is_sqlite else postgresql.insert
        for first in range(0, len(rows), ROWS_PER_TRANSACTION):
            async with self._db.session() as session:
                for start in range(first, min(first + ROWS_PER_TRANSACTION, len(rows)), _ROWS_PER_STATEMENT):
                    batch = rows[start : min(start + _ROWS_PER_STATEMENT, first + ROWS_PER_TRANSACTION)]
                    await session.exec(insert(model).values(batch).on_conflict_do_nothing())


def mentioning(nodes: Sequence[str], kb_ids: Sequence[str], limit: int) -> Any:
    """The read of up to `limit` live chunks of `kb_ids` that mention one of `nodes`."""
    return (
        select(GraphMention.chunk_id)
        .join(Chunk, col(Chunk.id) == col(GraphMention.chunk_id))
        .join(Document, live_chunk())
        .where(col(GraphMention.node_id).in_(list(nodes)), col(GraphMention.kb_id).in_(list(kb_ids)))
        .limit(limit)
    )


def _node_rows(kb_id: str, chunks: Sequence[ChunkGraph]) -> Iterator[dict[str, Any]]:
    for chunk in chunks:
        for entity in chunk.entities:
            yield {
                "id": node_id(kb_id, entity.key),
                "kb_id": kb_id,
                "name": entity.key[:_NAME_LENGTH],
                "label": entity.label[:64],
                "attributes": list(entity.attributes),
            }


def _mention_rows(kb_id: str, chunks: Sequence[ChunkGraph]) -> Iterator[dict[str, Any]]:
    for chunk in chunks:
        for entity in chunk.entities:
            yield {
                "node_id": node_id(kb_id, entity.key),
                "chunk_id": chunk.chunk_id,
                "kb_id": kb_id,
                "document_id": chunk.document_id,
            }


def _edge_rows(kb_id: str, chunks: Sequence[ChunkGraph]) -> Iterator[dict[str, Any]]:
    for chunk in chunks:
        for relation in chunk.relations:
            source, target = node_id(kb_id, relation.source), node_id(kb_id, relation.target)
            kind = relation.relation[:128]
            yield {
                "id": str(uuid.uuid5(_NODES, f"{chunk.document_id}|{source}|{target}|{kind}")),
                "kb_id": kb_id,
                "source_id": source,
                "target_id": target,
                "relation": kind,
                "document_id": chunk.document_id,
            }
