"""Reindex: rebuild knowledge bases' index objects from SQL into a new generation, then switch to it at once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from collections.abc import Collection as Container
from dataclasses import dataclass, replace
from typing import Protocol

from rag.ingest.faq_index import stored_variants
from rag.ingest.split.structure import indexed_text
from rag.lexical import LexicalAnalyzer
from rag.ports import Embedder, Progress, no_progress
from storage.records import ChunkRecord, FaqQuestionRecord, FaqRecord, KnowledgeBaseRecord
from storage.weaviate.collections import Collection

log = logging.getLogger(__name__)

# Chunks read, cut and embedded per step: one SQL page, one cache lookup, one index insert.
PAGE = 500


async def _no_fence() -> None:
    return None


class Rebuild(Protocol):
    """One collection's new generation being filled (met by storage.weaviate.rebuild.CollectionRebuild)."""

    async def copy_except(self, kb_ids: Container[str]) -> int:
        """Copy the live objects of every other knowledge base."""
        ...

    async def insert_chunks(self, chunks: Sequence[ChunkRecord], vectors: Sequence[Sequence[float]]) -> None:
        """Add chunks."""
        ...

    async def insert_faq_questions(
        self, questions: Sequence[FaqQuestionRecord], vectors: Sequence[Sequence[float]]
    ) -> None:
        """Add FAQ question variants."""
        ...

    async def switch(self) -> None:
        """Make the new generation the live one, at once."""
        ...

    async def discard(self) -> None:
        """Drop the new generation, leaving the live one as it was."""
        ...


class RebuildableIndex(Protocol):
    """An index that rebuilds a collection beside the live one (met by storage.weaviate.WeaviateStore)."""

    def missing_properties(self) -> dict[Collection, tuple[str, ...]]:
        """What an index made by an older version lacks."""
        ...

    def stale_terms(self) -> dict[Collection, int]:
        """The collections whose BM25 text an older analyzer cut."""
        ...

    def foreign_vectors(self) -> dict[Collection, str]:
        """The collections holding another embedding model's vectors."""
        ...

    async def begin_rebuild(self, collection: Collection) -> Rebuild:
        """A new, empty generation."""
        ...


class ChunkSource(Protocol):
    """The stored chunks (met by storage.repos.index_source.IndexSourceRepo)."""

    async def chunk_count(self, kb_id: str) -> int:
        """How many chunks a knowledge base holds."""
        ...

    async def chunk_page(self, kb_id: str, after: str, limit: int) -> list[ChunkRecord]:
        """The next page of a knowledge base's chunks, in id order, with titles."""
        ...


class FaqSource(Protocol):
    """The stored FAQs (met by storage.repos.faqs.FaqRepo)."""

    async def in_kb(self, kb_id: str) -> list[FaqRecord]:
        """A knowledge base's FAQs."""
        ...


@dataclass(frozen=True, slots=True)
class ReindexResult:
    """What a reindex wrote: from SQL for `rebuilt` knowledge bases, copied as they were for the others."""

    rebuilt: tuple[str, ...]
    chunks: int
    faq_questions: int
    copied: int


class Reindexer:
    """Rebuilds the index from SQL; searches read the old generation until the new one is complete."""

    def __init__(
        self,
        index: RebuildableIndex,
        chunks: ChunkSource,
        faqs: FaqSource,
        embedder: Embedder,
        lexical: LexicalAnalyzer,
    ) -> None:
        self._index = index
        self._chunks = chunks
        self._faqs = faqs
        self._embedder = embedder
        self._lexical = lexical

    async def reindex(
        self,
        kb: KnowledgeBaseRecord,
        every_kb: Sequence[KnowledgeBaseRecord],
        progress: Progress = no_progress,
        *,
        before_switch: Callable[[], Awaitable[None]] = _no_fence,
    ) -> ReindexResult:
        """Rebuild `kb` from SQL, copying other knowledge bases' objects as they are; when the index predates this
        version (it lacks properties, or an older analyzer cut its BM25 text) or holds another embedding model's
        vectors, every one of `every_kb` is rebuilt from SQL instead, since copies would be outdated too. BM25 text
        is always cut afresh by this analyzer. On any failure or interruption the new generation is dropped and the
        old one keeps answering. `before_switch` is awaited once the new generation is full: raising there (the
        caller lost its hold on the index, so writes went to the live generation meanwhile) drops it instead.
        """
        index = self._index
        outdated = bool(index.missing_properties() or index.stale_terms() or index.foreign_vectors())
        if outdated:
            return await self.rebuild_all(every_kb, progress, before_switch=before_switch)
        return await self._rebuild([kb], progress, before_switch, copy_others=True)

    async def rebuild_all(
        self,
        every_kb: Sequence[KnowledgeBaseRecord],
        progress: Progress = no_progress,
        *,
        before_switch: Callable[[], Awaitable[None]] = _no_fence,
    ) -> ReindexResult:
        """Rebuild every one of `every_kb` from SQL and copy nothing, so the new generation holds exactly what SQL
        holds (objects of knowledge bases SQL no longer knows are dropped at the switch); failures as in `reindex`."""
        every = list({k.id: k for k in every_kb}.values())
        return await self._rebuild(every, progress, before_switch, copy_others=False)

    async def _rebuild(
        self,
        rebuilt: list[KnowledgeBaseRecord],
        progress: Progress,
        before_switch: Callable[[], Awaitable[None]],
        *,
        copy_others: bool,
    ) -> ReindexResult:
        kb_ids = {k.id for k in rebuilt}
        faqs = {k.id: await self._faqs.in_kb(k.id) for k in rebuilt}
        variants = [v for k in rebuilt for faq in faqs[k.id] for v in stored_variants(faq, self._lexical)]
        total = sum([await self._chunks.chunk_count(k.id) for k in rebuilt]) + len(variants)
        rebuilds: list[Rebuild] = []
        try:
            for collection in Collection:
                rebuilds.append(await self._index.begin_rebuild(collection))
            chunk_rebuild, faq_rebuild = rebuilds
            copied = sum([await rebuild.copy_except(kb_ids) for rebuild in rebuilds]) if copy_others else 0
            done = 0
            await progress("index", done, total)
            for k in rebuilt:
                async for page in self._pages(k.id):
                    await chunk_rebuild.insert_chunks(
                        page, await self._embedder.embed([indexed_text(c.text, c.metadata) for c in page])
                    )
                    done += len(page)
                    await progress("index", done, total)
            for first in range(0, len(variants), PAGE):
                batch = variants[first : first + PAGE]
                await faq_rebuild.insert_faq_questions(batch, await self._embedder.embed([v.text for v in batch]))
                done += len(batch)
                await progress("index", done, total)
            await before_switch()
            for rebuild in rebuilds:
                await rebuild.switch()
        except BaseException:
            # Shielded: an interrupted (cancelled) reindex must still drop what it built.
            for rebuild in rebuilds:
                await asyncio.shield(rebuild.discard())
            raise
        log.info("reindex=done kbs=%d chunks=%d faq_questions=%d copied=%d", len(rebuilt), done, len(variants), copied)
        return ReindexResult(tuple(k.name for k in rebuilt), done - len(variants), len(variants), copied)

    async def _pages(self, kb_id: str) -> AsyncIterator[list[ChunkRecord]]:
        after = ""
        while page := await self._chunks.chunk_page(kb_id, after, PAGE):
            # jieba cuts the BM25 text: CPU work, off the event loop.
            terms = await asyncio.to_thread(self._bm25_texts, page)
            yield [replace(chunk, bm25_text=text) for chunk, text in zip(page, terms, strict=True)]
            after = page[-1].chunk_id

    def _bm25_texts(self, chunks: Sequence[ChunkRecord]) -> list[str]:
        return [self._lexical.bm25_text(indexed_text(chunk.text, chunk.metadata)) for chunk in chunks]
