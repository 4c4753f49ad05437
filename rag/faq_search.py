"""FAQ matching: positive and negative question variants, an absolute confidence, the negative-question filter."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from rag.faq_text import faq_candidate
from rag.ingest.faq_import import question_key
from rag.lexical import LexicalAnalyzer
from rag.retrieval import SearchIndex
from rag.types import Candidate, Vector
from storage.records import FaqRecord
from storage.repos.faqs import FaqRepo
from storage.weaviate.schema import Collection


@dataclass(frozen=True, slots=True)
class FaqSearchConfig:
    """How many variants to fetch and when a negative question vetoes its FAQ."""

    limit: int = 15
    # A query this close (cosine) to one of an FAQ's negative questions, and at least as close
    # as to any of its positive ones, must not be answered by that FAQ. Exact matching alone
    # (the seed design) misses every paraphrase of a negative question.
    negative_similarity: float = 0.85
    # Fetch twice as many variants, up to this many rounds, while too few distinct FAQs come back.
    max_rounds: int = 5
    min_unique: int = 3
    # Below this confidence an FAQ is not offered at all: with all-MiniLM-L6-v2, unrelated English
    # questions score about 0.0-0.4 and paraphrases 0.6 and up (stackfaq DEV). A lexical (BM25)
    # match lowers the bar, since Chinese FAQs are matched mostly by words with this model.
    min_score: float = 0.55
    min_score_with_lexical: float = 0.35


@dataclass(frozen=True, slots=True)
class _Evidence:
    positive: float = 0.0
    negative: float = 0.0
    lexical: bool = False


class FaqSearch:
    """Finds the FAQs that answer a query; confidence is the best positive variant's cosine similarity."""

    def __init__(
        self, index: SearchIndex, faqs: FaqRepo, lexical: LexicalAnalyzer, config: FaqSearchConfig | None = None
    ) -> None:
        self._index = index
        self._faqs = faqs
        self._lexical = lexical
        self.config = config or FaqSearchConfig()

    async def search(self, query: str, vector: Vector, kb_ids: Sequence[str]) -> list[Candidate]:
        """Enabled FAQs matching `query`, best first, with vetoed ones removed."""
        if not kb_ids:
            return []
        evidence = await self._evidence(query, vector, kb_ids)
        records = {faq.id: faq for faq in await self._faqs.by_ids(list(evidence))}
        candidates = []
        for faq_id, found in evidence.items():
            faq = records.get(faq_id)
            if faq is None or not faq.enabled or self._vetoed(query, faq, found) or not self._relevant(found):
                continue
            legs = frozenset({"faq", "bm25"} if found.lexical else {"faq"})
            candidates.append(faq_candidate(faq, score=found.positive, legs=legs))
        return sorted(candidates, key=lambda candidate: candidate.score, reverse=True)

    def _relevant(self, found: _Evidence) -> bool:
        bar = self.config.min_score_with_lexical if found.lexical else self.config.min_score
        return found.positive >= bar

    def _vetoed(self, query: str, faq: FaqRecord, found: _Evidence) -> bool:
        key = question_key(query)
        if any(question_key(negative) == key for negative in faq.negative_questions):
            return True
        return found.negative >= self.config.negative_similarity and found.negative >= found.positive

    async def _evidence(self, query: str, vector: Vector, kb_ids: Sequence[str]) -> dict[str, _Evidence]:
        tokens = await asyncio.to_thread(self._lexical.bm25_text, query)
        limit = self.config.limit
        for _ in range(self.config.max_rounds):
            by_vector, by_text = await asyncio.gather(
                self._index.search_vector(Collection.FAQ_QUESTIONS, kb_ids, vector, limit),
                self._index.search_bm25(Collection.FAQ_QUESTIONS, kb_ids, tokens, limit),
            )
            evidence: dict[str, _Evidence] = {}
            for hit in by_vector:
                faq_id, kind = str(hit.properties["faq_id"]), str(hit.properties["kind"])
                old = evidence.get(faq_id, _Evidence())
                if kind == "negative":
                    evidence[faq_id] = _Evidence(old.positive, max(old.negative, hit.score), old.lexical)
                else:
                    evidence[faq_id] = _Evidence(max(old.positive, hit.score), old.negative, old.lexical)
            for hit in by_text:
                if str(hit.properties["kind"]) != "negative" and str(hit.properties["faq_id"]) in evidence:
                    old = evidence[str(hit.properties["faq_id"])]
                    evidence[str(hit.properties["faq_id"])] = _Evidence(old.positive, old.negative, True)
            # Many variants of one popular FAQ can crowd out the rest: widen until enough distinct FAQs.
            if len(evidence) >= self.config.min_unique or len(by_vector) < limit:
                return evidence
            limit *= 2
        return evidence
