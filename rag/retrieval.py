"""Hybrid retrieval: vector and BM25 legs over chunks and FAQ questions, fused by weighted RRF.

Chunk candidates are built from the hits themselves (text, title, metadata and vector are in the index); only hits
from an index made by an older ragbot, which lacks some of those, are joined to SQL.
"""

from __future__ import annotations

import asyncio
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from rag.fusion import rrf
from rag.language import LANGUAGES, Language, language_of
from rag.lexical import LexicalAnalyzer
from rag.ports import Embedder
from rag.types import Candidate, Vector
from storage.errors import NotFound
from storage.records import ChunkRecord, SearchHit
from storage.repos.documents import DocumentRepo
from storage.repos.faqs import FaqRepo
from storage.weaviate.collections import BM25_PROPERTY, Collection
from storage.weaviate.objects import chunk_from_hit

Mode = Literal["bm25", "vector", "rrf", "weaviate"]


class SearchIndex(Protocol):
    """The searches retrieval needs (met by storage.weaviate.WeaviateStore)."""

    async def search_vector(
        self, collection: Collection, kb_ids: Sequence[str], vector: Sequence[float], limit: int
    ) -> list[SearchHit]:
        """Nearest neighbours."""
        ...

    async def search_bm25(
        self, collection: Collection, kb_ids: Sequence[str], tokens: str, limit: int
    ) -> list[SearchHit]:
        """BM25 over pre-tokenised text."""
        ...

    async def search_hybrid(
        self,
        collection: Collection,
        kb_ids: Sequence[str],
        vector: Sequence[float],
        tokens: str,
        limit: int,
        *,
        alpha: float = 0.5,
        fusion: Literal["ranked", "relative"] = "ranked",
    ) -> list[SearchHit]:
        """The index's own fusion of both legs."""
        ...


def _weights(**legs: float) -> Mapping[str, float]:
    return dict(legs)


@dataclass(frozen=True, slots=True)
class FusionWeights:
    """RRF weight of each leg, by query language and by what is searched (passages or FAQ questions).

    Chosen with bench/fusion_weights.py on the DEV sets for the default embedder (all-MiniLM-L6-v2, English
    only) and jieba BM25; tables in bench/RESULTS.md. Chinese is carried by its words: any vector weight lowered
    nDCG@10 on cmrc2018 (0.973 at 0 -> 0.954 at 0.1 -> 0.773 at 1) and hit@1 on bq-faq (0.157 -> 0.137 ->
    0.092). English paraphrase FAQs are matched by meaning: any BM25 weight lowered stackfaq hit@1 (0.947 at 0
    -> 0.886 at 0.1 -> 0.758 at 1). A leg weighing 0 is not searched at all. Sweep again for another embedder.
    """

    chunks: Mapping[Language, Mapping[str, float]] = field(
        default_factory=lambda: {"zh": _weights(vector=0.0, bm25=1.0), "en": _weights(vector=1.0, bm25=1.0)}
    )
    faqs: Mapping[Language, Mapping[str, float]] = field(
        default_factory=lambda: {"zh": _weights(vector=0.0, bm25=1.0), "en": _weights(vector=1.0, bm25=0.0)}
    )

    @classmethod
    def for_languages(cls, served: Container[Language]) -> FusionWeights:
        """The weights for an embedder that serves the `served` languages: the English sweep's where its vectors
        are trusted (until the user sweeps their own model), words alone where they are not."""
        trusted = cls()
        words = _weights(vector=0.0, bm25=1.0)
        return cls(
            chunks={lang: trusted.chunks["en"] if lang in served else words for lang in LANGUAGES},
            faqs={lang: trusted.faqs["en"] if lang in served else words for lang in LANGUAGES},
        )

    def vector_languages(self) -> frozenset[Language]:
        """The languages whose chunk search counts the vector leg: where the embedder is trusted."""
        return frozenset(lang for lang, legs in self.chunks.items() if legs.get("vector", 1.0) > 0)


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """How many candidates each leg fetches and how legs are fused."""

    top_k: int = 5
    # WeKnora fetches 3x top_k per leg so fusion and rerank have room to reorder.
    candidate_factor: int = 3
    rrf_k: int = 60
    weights: FusionWeights = field(default_factory=FusionWeights)


# A chunk the asker targeted by document is relevant by definition (WeKnora scores direct loads 1.0).
DIRECT_SCORE = 1.0


def chunk_candidate(chunk: ChunkRecord, score: float, legs: frozenset[str], vector: Vector | None = None) -> Candidate:
    """A stored chunk as a candidate, with its document's title (`chunk.title`) in the metadata."""
    return Candidate(
        id=chunk.chunk_id,
        kind="chunk",
        kb_id=chunk.kb_id,
        text=chunk.text,
        score=score,
        base_score=score,
        legs=legs,
        document_id=chunk.document_id,
        segment_id=chunk.segment_id,
        position=chunk.position,
        start=chunk.start,
        end=chunk.end,
        metadata={**chunk.metadata, "title": chunk.title},
        vector=vector,
    )


class Retriever:
    """Runs the search legs for one query and fuses them into candidates."""

    def __init__(
        self,
        index: SearchIndex,
        embedder: Embedder,
        lexical: LexicalAnalyzer,
        documents: DocumentRepo,
        faqs: FaqRepo,
        config: RetrievalConfig | None = None,
        *,
        questions: Embedder | None = None,
    ) -> None:
        self._index = index
        self._embedder = embedder
        # Questions are embedded apart from content where the embedder can (not stored in the cache table).
        self._questions = questions or embedder
        self._lexical = lexical
        self._documents = documents
        self._faqs = faqs
        self.config = config or RetrievalConfig()

    @property
    def lexical(self) -> LexicalAnalyzer:
        """The analyzer that cuts queries and passages into BM25 terms."""
        return self._lexical

    def with_config(self, config: RetrievalConfig) -> Retriever:
        """The same retriever with other settings (fusion weights tuned on an eval set, say)."""
        return Retriever(
            self._index, self._embedder, self._lexical, self._documents, self._faqs, config, questions=self._questions
        )

    async def query_vector(self, query: str) -> Vector:
        """The query's embedding (with the model's query prompt, where it has one)."""
        [vector] = await self._questions.embed([query], kind="query")
        return vector

    async def chunk_hits(
        self, query: str, vector: Vector, kb_ids: Sequence[str], limit: int, mode: Mode = "rrf"
    ) -> list[tuple[str, float]]:
        """Chunk ids with their scores, best first, for one search mode."""
        ranked, _ = await self._ranked(Collection.CHUNKS, query, vector, kb_ids, limit, mode)
        return ranked[:limit]

    async def search_chunks(
        self, query: str, kb_ids: Sequence[str], *, limit: int | None = None, vector: Vector | None = None
    ) -> list[Candidate]:
        """Fused chunk candidates joined to their SQL rows (ids SQL no longer has are dropped)."""
        limit = limit or self.config.top_k * self.config.candidate_factor
        if vector is None:
            vector = await self.query_vector(query)
        tokens = await asyncio.to_thread(self._lexical.bm25_text, query)
        weights = self.config.weights.chunks[language_of(query)]
        legs = await self._legs(Collection.CHUNKS, vector, tokens, kb_ids, limit, "rrf", weights)
        fused = rrf(
            {name: [hit.id for hit in hits] for name, hits in legs.items()}, k=self.config.rrf_k, weights=weights
        )
        ids_by_leg = {name: {hit.id for hit in hits} for name, hits in legs.items()}
        found_by = {
            chunk_id: frozenset(name for name, ids in ids_by_leg.items() if chunk_id in ids)
            for chunk_id, _ in fused[:limit]
        }
        hits = {hit.id: hit for found in legs.values() for hit in found}
        return await self.chunk_candidates(fused[:limit], found_by, hits)

    async def chunk_candidates(
        self,
        scored: Sequence[tuple[str, float]],
        legs: Mapping[str, frozenset[str]],
        hits: Mapping[str, SearchHit] | None = None,
    ) -> list[Candidate]:
        """Chunk ids with scores as candidates, in the given order.

        A chunk comes from its hit when `hits` holds one with every property; the rest are read from SQL in one
        query (ids SQL lacks are dropped).
        """
        hits = hits or {}
        rows: dict[str, ChunkRecord] = {}
        vectors: dict[str, Vector | None] = {}
        for chunk_id, _ in scored:
            hit = hits.get(chunk_id)
            chunk = chunk_from_hit(hit) if hit is not None else None
            if chunk is not None and hit is not None:
                rows[chunk_id], vectors[chunk_id] = chunk, hit.vector
        unread = [chunk_id for chunk_id, _ in scored if chunk_id not in rows]
        if unread:
            found = await self._documents.chunks_with_titles(unread)
            rows.update((chunk.chunk_id, replace(chunk, title=title)) for chunk, title in found)
        return [
            chunk_candidate(rows[chunk_id], score, legs.get(chunk_id, frozenset()), vectors.get(chunk_id))
            for chunk_id, score in scored
            if chunk_id in rows
        ]

    async def document_chunk_count(self, document_ids: Sequence[str]) -> int:
        """How many chunks the given documents hold in all (documents SQL does not know count 0)."""
        total = 0
        for document_id in dict.fromkeys(document_ids):
            try:
                total += (await self._documents.get(document_id)).chunk_count
            except NotFound:
                continue
        return total

    async def document_candidates(self, document_ids: Sequence[str], kb_ids: Sequence[str]) -> list[Candidate]:
        """Every chunk of the given documents that belong to `kb_ids`, in document and position order."""
        chunks = [
            chunk
            for document_id in dict.fromkeys(document_ids)
            for chunk in await self._documents.document_chunks(document_id)
            if chunk.kb_id in kb_ids
        ]
        titles = await self._documents.titles([chunk.document_id for chunk in chunks])
        return [
            chunk_candidate(
                replace(chunk, title=titles.get(chunk.document_id, "")), DIRECT_SCORE, frozenset({"direct"})
            )
            for chunk in chunks
        ]

    async def faq_hits(
        self, query: str, vector: Vector, kb_ids: Sequence[str], limit: int, mode: Mode = "rrf"
    ) -> list[tuple[str, float, str]]:
        """(faq_id, score, kind of the best-matching variant), best first, one entry per FAQ."""
        ranked, variants = await self._ranked(Collection.FAQ_QUESTIONS, query, vector, kb_ids, limit, mode)
        best: dict[str, tuple[str, float, str]] = {}
        for variant_id, score in ranked:
            properties = variants[variant_id].properties
            faq_id = str(properties["faq_id"])
            if faq_id not in best:
                best[faq_id] = (faq_id, score, str(properties["kind"]))
        return list(best.values())

    async def _ranked(
        self, collection: Collection, query: str, vector: Vector, kb_ids: Sequence[str], limit: int, mode: Mode
    ) -> tuple[list[tuple[str, float]], dict[str, SearchHit]]:
        """Ids with scores, best first, and the hits by id, for one mode over one collection."""
        tokens = await asyncio.to_thread(self._lexical.bm25_text, query)
        if mode == "weaviate":
            hits = await self._index.search_hybrid(collection, kb_ids, vector, tokens, limit)
            return [(hit.id, hit.score) for hit in hits], {hit.id: hit for hit in hits}
        legs = await self._legs(collection, vector, tokens, kb_ids, limit, mode)
        by_id = {hit.id: hit for hits in legs.values() for hit in hits}
        if mode != "rrf":
            return [(hit.id, hit.score) for hit in legs[mode]], by_id
        table = self.config.weights.chunks if collection is Collection.CHUNKS else self.config.weights.faqs
        names = {name: [hit.id for hit in hits] for name, hits in legs.items()}
        return rrf(names, k=self.config.rrf_k, weights=table[language_of(query)]), by_id

    async def _legs(
        self,
        collection: Collection,
        vector: Vector,
        tokens: str,
        kb_ids: Sequence[str],
        limit: int,
        mode: Mode,
        weights: Mapping[str, float] | None = None,
    ) -> dict[str, list[SearchHit]]:
        wanted: tuple[str, ...] = ("vector", "bm25") if mode in ("rrf", "weaviate") else (mode,)
        if weights is not None:
            wanted = tuple(name for name in wanted if weights.get(name, 1.0) > 0)
        searches = {
            "vector": lambda: self._index.search_vector(collection, kb_ids, vector, limit),
            "bm25": lambda: self._index.search_bm25(collection, kb_ids, tokens, limit),
        }
        results = await asyncio.gather(*(searches[name]() for name in wanted))
        for hits in results:
            for hit in hits:
                text, terms = hit.properties.get("text"), hit.properties.get(BM25_PROPERTY)
                if isinstance(text, str) and isinstance(terms, str):
                    self._lexical.remember(text, terms)  # rerank and MMR cut these texts again otherwise
        return dict(zip(wanted, results, strict=True))
