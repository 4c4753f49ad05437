"""CollectionRebuild: a new generation filled beside the live one, made live by one alias switch or discarded."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any

import weaviate
from weaviate.collections.classes.data import DataObject

from storage.records import ChunkRecord, FaqQuestionRecord
from storage.weaviate.generations import switch_to
from storage.weaviate.objects import chunk_object, faq_question_object, hit_vector
from storage.weaviate.schema import CollectionSpec

log = logging.getLogger(__name__)

Insert = Callable[[str, Sequence[DataObject[Any, Any]]], Awaitable[None]]
# Objects copied per insert call; the same bound as the store's own inserts.
_COPY_BATCH = 200


class CollectionRebuild:
    """One collection being rebuilt: searches keep reading the live generation until `switch()`."""

    def __init__(
        self,
        client: weaviate.WeaviateAsyncClient,
        spec: CollectionSpec,
        live: str | None,
        shadow: str,
        insert: Insert,
        on_switch: Callable[[CollectionSpec], None] = lambda spec: None,
    ) -> None:
        self._client = client
        self._spec = spec
        self._live = live
        self.shadow = shadow
        self._insert = insert
        self._on_switch = on_switch
        self._done = False

    @property
    def spec(self) -> CollectionSpec:
        """The collection being rebuilt."""
        return self._spec

    async def copy_except(self, kb_ids: Collection[str]) -> int:
        """Copy every live object of other knowledge bases than `kb_ids`, vectors included; returns how many."""
        if self._live is None:
            return 0
        copied = 0
        batch: list[DataObject[Any, Any]] = []
        async for obj in self._client.collections.use(self._live).iterator(include_vector=True):
            if obj.properties.get("kb_id") in kb_ids:
                continue
            batch.append(DataObject(uuid=obj.uuid, properties=dict(obj.properties), vector=hit_vector(obj)))
            if len(batch) >= _COPY_BATCH:
                await self._insert(self.shadow, batch)
                copied, batch = copied + len(batch), []
        if batch:
            await self._insert(self.shadow, batch)
            copied += len(batch)
        return copied

    async def insert_chunks(self, chunks: Sequence[ChunkRecord], vectors: Sequence[Sequence[float]]) -> None:
        """Add chunks to the new generation (invisible to searches until the switch)."""
        await self._insert(self.shadow, [chunk_object(c, v) for c, v in zip(chunks, vectors, strict=True)])

    async def insert_faq_questions(
        self, questions: Sequence[FaqQuestionRecord], vectors: Sequence[Sequence[float]]
    ) -> None:
        """Add FAQ question variants to the new generation."""
        await self._insert(self.shadow, [faq_question_object(q, v) for q, v in zip(questions, vectors, strict=True)])

    async def switch(self) -> None:
        """Make the new generation the live one in one alias update, and drop the old one."""
        await switch_to(self._client, self._spec, self.shadow)
        self._done = True
        self._on_switch(self._spec)

    async def discard(self) -> None:
        """Drop the new generation; the live one is untouched. Nothing to do after a switch."""
        if self._done:
            return
        self._done = True
        await self._client.collections.delete(self.shadow)
        log.info("weaviate=rebuild_discarded name=%s", self.shadow)
