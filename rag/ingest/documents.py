"""Document ingestion: bytes in, a fully indexed new version out, the old one removed only afterwards."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from dataclasses import dataclass

from tiktoken import Encoding

from rag.errors import NoTextFound
from rag.ingest.chunking import CleanedDocument, ParentChunk, build_chunks, clean_document
from rag.ingest.extract import ExtractLimits, extract
from rag.ingest.rules import parse_rule
from rag.lexical import LexicalAnalyzer
from rag.ports import Embedder, Progress, VectorStore, no_progress
from storage.records import ChunkRecord, DocumentVersion, KnowledgeBaseRecord, SegmentRecord
from storage.repos.documents import DocumentRepo
from storage.weaviate.schema import Collection

log = logging.getLogger(__name__)

_EMBED_BATCH = 64
_IDS = uuid.UUID("6f1c1a52-7f0e-4c55-9d0f-3b8f2a9e5d10")


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file to ingest: its bytes, what it calls itself, and the identity it is stored under."""

    data: bytes
    source_uri: str
    filename: str | None = None
    content_type: str | None = None


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What one ingestion did."""

    document_id: str
    title: str
    unchanged: bool
    segments: int
    chunks: int
    characters: int


def _stable_id(*parts: object) -> str:
    # The same version of the same document always gets the same ids, so a retried
    # ingestion overwrites its own index objects instead of leaving orphans behind.
    return str(uuid.uuid5(_IDS, "|".join(str(part) for part in parts)))


class DocumentIngestor:
    """Extract, clean, split, embed and index one document into a knowledge base."""

    def __init__(
        self,
        documents: DocumentRepo,
        store: VectorStore,
        embedder: Embedder,
        lexical: LexicalAnalyzer,
        encoding: Encoding,
        limits: ExtractLimits | None = None,
    ) -> None:
        self._documents = documents
        self._store = store
        self._embedder = embedder
        self._lexical = lexical
        self._encoding = encoding
        self._limits = limits or ExtractLimits()

    async def ingest(
        self, kb: KnowledgeBaseRecord, source: SourceFile, progress: Progress = no_progress
    ) -> IngestResult:
        """Index `source`; identical content under the same rule is a no-op that embeds nothing."""
        rule = parse_rule(kb.chunking)
        content_hash = hashlib.sha256(source.data).hexdigest()
        rule_hash = rule.fingerprint()
        existing = await self._documents.find(kb.id, source.source_uri)
        if existing and (existing.content_hash, existing.rule_hash, existing.status) == (
            content_hash,
            rule_hash,
            "indexed",
        ):
            return IngestResult(
                existing.id, existing.title, True, existing.segment_count, existing.chunk_count, existing.char_count
            )

        await progress("extract", 0, 1)
        extracted = await asyncio.to_thread(
            extract, source.data, filename=source.filename, content_type=source.content_type, limits=self._limits
        )
        await progress("split", 0, 1)
        cleaned = clean_document(extracted, rule)
        parents = await asyncio.to_thread(build_chunks, cleaned.text, rule, self._encoding)
        if not parents:
            raise NoTextFound("no text left after cleaning: the document is empty or only whitespace")
        document_id = existing.id if existing else _stable_id(kb.id, source.source_uri)
        version_key = (kb.id, source.source_uri, content_hash, rule_hash)
        # jieba runs inside _records: a few ms a chunk, kept off the event loop.
        segments, chunks = await asyncio.to_thread(
            self._records, kb.id, document_id, version_key, cleaned, parents, parent_child=rule.mode == "parent_child"
        )
        title = extracted.title or source.filename or source.source_uri
        vectors = await self._embed(chunks, progress)

        await progress("index", 0, len(chunks))
        await self._store.upsert_chunks(chunks, vectors)
        version = DocumentVersion(
            kb_id=kb.id,
            source_uri=source.source_uri,
            title=title,
            mime_type=extracted.mime_type,
            content_hash=content_hash,
            rule_hash=rule_hash,
            text=cleaned.text,
            segments=tuple(segments),
            chunks=tuple(chunks),
            meta={"filename": source.filename or "", **dict(extracted.metadata)},
        )
        try:
            document, replaced = await self._documents.store_version(version, document_id)
        except BaseException:
            # SQL still points at the previous version: drop what was just indexed for this one.
            await self._store.delete_ids(Collection.CHUNKS, [chunk.chunk_id for chunk in chunks])
            raise
        if replaced:
            kept = {chunk.chunk_id for chunk in chunks}
            await self._store.delete_ids(Collection.CHUNKS, [chunk_id for chunk_id in replaced if chunk_id not in kept])
            await self._documents.forget_pending(document.id, replaced)
        await progress("index", len(chunks), len(chunks))
        log.info("ingest=done kb=%s document=%s segments=%d chunks=%d", kb.id, document.id, len(segments), len(chunks))
        return IngestResult(document.id, title, False, len(segments), len(chunks), len(cleaned.text))

    def _records(
        self,
        kb_id: str,
        document_id: str,
        version_key: tuple[str, ...],
        cleaned: CleanedDocument,
        parents: list[ParentChunk],
        *,
        parent_child: bool,
    ) -> tuple[list[SegmentRecord], list[ChunkRecord]]:
        segments: list[SegmentRecord] = []
        chunks: list[ChunkRecord] = []
        for parent_position, parent in enumerate(parents):
            segment_id = _stable_id(*version_key, "segment", parent_position) if parent_child else None
            children = parent.children if parent_child else (parent.chunk,)
            child_ids = []
            for child in children:
                chunk_id = _stable_id(*version_key, "chunk", child.position if parent_child else parent_position)
                child_ids.append(chunk_id)
                chunks.append(
                    ChunkRecord(
                        chunk_id=chunk_id,
                        kb_id=kb_id,
                        document_id=document_id,
                        segment_id=segment_id,
                        position=len(chunks),
                        start=child.start,
                        end=child.end,
                        text=child.text,
                        bm25_text=self._lexical.bm25_text(child.text),
                        metadata={**dict(cleaned.metadata_at(child.start)), **dict(child.metadata)},
                    )
                )
            if segment_id is not None:
                segments.append(
                    SegmentRecord(
                        segment_id=segment_id,
                        document_id=document_id,
                        kb_id=kb_id,
                        position=parent_position,
                        start=parent.chunk.start,
                        end=parent.chunk.end,
                        text=parent.chunk.text,
                        child_ids=tuple(child_ids),
                        metadata=dict(cleaned.metadata_at(parent.chunk.start)),
                    )
                )
        return segments, chunks

    async def _embed(self, chunks: list[ChunkRecord], progress: Progress) -> list[list[float]]:
        vectors: list[list[float]] = []
        await progress("embed", 0, len(chunks))
        for start in range(0, len(chunks), _EMBED_BATCH):
            batch = chunks[start : start + _EMBED_BATCH]
            vectors.extend(await self._embedder.embed([chunk.text for chunk in batch]))
            await progress("embed", len(vectors), len(chunks))
        return vectors
