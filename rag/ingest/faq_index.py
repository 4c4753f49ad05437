"""FAQ import: every question variant (standard, similar, negative) indexed for vector and BM25 search."""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from rag.ingest.faq_sheet import FaqEntry, question_key
from rag.lexical import LexicalAnalyzer
from rag.ports import Embedder, Progress, VectorStore, no_progress
from storage.records import FaqQuestionRecord, FaqRecord, KnowledgeBaseRecord
from storage.repos.faqs import FaqDraft, FaqRepo
from storage.weaviate.collections import Collection

log = logging.getLogger(__name__)

_IDS = uuid.UUID("2c3f7a0e-5b1d-4f4e-8a61-0d9c2e7b4a33")
_EMBED_BATCH = 64


@dataclass(frozen=True, slots=True)
class FaqImportResult:
    """Counts of one import."""

    created: int
    updated: int
    unchanged: int
    questions_indexed: int


def _content_hash(entry: FaqEntry) -> str:
    payload = [entry.question, entry.answers, entry.similar_questions, entry.negative_questions, entry.enabled]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()


def faq_id(kb_id: str, question: str) -> str:
    """An FAQ's id: fixed by its knowledge base and standard question, so it is known before saving."""
    return str(uuid.uuid5(_IDS, f"{kb_id}|faq|{question}"))


def _variants(
    kb_id: str, faq: FaqRecord | FaqEntry, identifier: str, lexical: LexicalAnalyzer | None
) -> list[FaqQuestionRecord]:
    kinds: list[tuple[str, str]] = [("standard", faq.question)]
    kinds += [("similar", text) for text in faq.similar_questions]
    kinds += [("negative", text) for text in faq.negative_questions]
    return [
        FaqQuestionRecord(
            variant_id=str(uuid.uuid5(_IDS, f"{identifier}|{kind}|{text}")),
            kb_id=kb_id,
            faq_id=identifier,
            kind=kind,  # type: ignore[arg-type]
            text=text,
            bm25_text=lexical.bm25_text(text) if lexical else "",
        )
        for kind, text in kinds
    ]


def stored_variants(faq: FaqRecord, lexical: LexicalAnalyzer) -> list[FaqQuestionRecord]:
    """A stored FAQ's question variants as its import indexed them (same ids, same BM25 text): for a reindex."""
    return _variants(faq.kb_id, faq, faq.id, lexical)


class FaqImporter:
    """Saves FAQ entries and keeps the index's question variants in step with them."""

    def __init__(self, faqs: FaqRepo, store: VectorStore, embedder: Embedder, lexical: LexicalAnalyzer) -> None:
        self._faqs = faqs
        self._store = store
        self._embedder = embedder
        self._lexical = lexical

    async def import_entries(
        self, kb: KnowledgeBaseRecord, entries: Sequence[FaqEntry], progress: Progress = no_progress
    ) -> FaqImportResult:
        """Insert new entries, update changed ones, leave identical ones alone (nothing embedded for them)."""
        current = {question_key(faq.question): faq for faq in await self._faqs.in_kb(kb.id)}
        changed = [
            entry
            for entry in entries
            if (old := current.get(question_key(entry.question))) is None or old.content_hash != _content_hash(entry)
        ]
        variants = [
            variant
            for entry in changed
            for variant in _variants(kb.id, entry, self._identifier(kb.id, entry, current), self._lexical)
        ]
        await progress("embed", 0, len(variants))
        vectors: list[list[float]] = []
        for start in range(0, len(variants), _EMBED_BATCH):
            vectors.extend(
                await self._embedder.embed([variant.text for variant in variants[start : start + _EMBED_BATCH]])
            )
            await progress("embed", len(vectors), len(variants))
        # Index first: if SQL were saved first and indexing failed, a retry would see the
        # entries as unchanged and never index them.
        await progress("index", 0, len(variants))
        await self._store.upsert_faq_questions(variants, vectors)
        drafts = [
            FaqDraft(
                id=self._identifier(kb.id, entry, current),
                question=entry.question,
                similar_questions=entry.similar_questions,
                negative_questions=entry.negative_questions,
                answers=entry.answers,
                enabled=entry.enabled,
                content_hash=_content_hash(entry),
            )
            for entry in changed
        ]
        saved = await self._faqs.save_many(kb.id, drafts)
        kept = {variant.variant_id for variant in variants}
        stale = [
            variant.variant_id
            for _, previous in saved
            if previous is not None
            for variant in _variants(kb.id, previous, previous.id, None)
            if variant.variant_id not in kept
        ]
        await self._store.delete_ids(Collection.FAQ_QUESTIONS, stale)
        await progress("index", len(variants), len(variants))
        created = sum(1 for _, previous in saved if previous is None)
        log.info("faq_import=done kb=%s created=%d updated=%d", kb.id, created, len(saved) - created)
        return FaqImportResult(created, len(saved) - created, len(entries) - len(changed), len(variants))

    async def delete(self, faq: FaqRecord) -> None:
        """Remove an FAQ: its question variants from the index first, then its row."""
        variants = _variants(faq.kb_id, faq, faq.id, None)
        await self._store.delete_ids(Collection.FAQ_QUESTIONS, [variant.variant_id for variant in variants])
        await self._faqs.delete(faq.id)

    @staticmethod
    def _identifier(kb_id: str, entry: FaqEntry, current: dict[str, FaqRecord]) -> str:
        existing = current.get(question_key(entry.question))
        return existing.id if existing is not None else faq_id(kb_id, question_key(entry.question))
