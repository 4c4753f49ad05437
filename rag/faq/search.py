"""FAQ matching: positive and negative question variants, an absolute confidence, the negative-question filter."""

from __future__ import annotations

import asyncio
import functools
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from rag.faq.candidate import faq_candidate
from rag.faq.distinctive import FaqWords, carried, distinctive_terms, faq_words, written_names
from rag.function_words import content_terms
from rag.fusion import RRF_K, cosine, rrf
from rag.ingest.faq_sheet import question_key
from rag.language import Language, language_of
from rag.lexical import LexicalAnalyzer
from rag.ports import Embedder
from rag.retrieval import FusionWeights, SearchIndex
from rag.types import Candidate, Vector
from storage.records import FaqRecord
from storage.repos.faqs import FaqRepo
from storage.weaviate.collections import Collection

# FAQs whose words are kept (a few KB each).
_REMEMBERED_FAQS = 4096


def _default_weights() -> Mapping[Language, Mapping[str, float]]:
    return FusionWeights().faqs


@dataclass(frozen=True, slots=True)
class FaqSearchConfig:
    """How many variants to fetch, how FAQs are ranked, and when one is offered or vetoed."""

    limit: int = 15
    # A query this close (cosine) to one of an FAQ's negative questions, and at least as close
    # as to any of its positive ones, must not be answered by that FAQ. Exact matching alone
    # (the seed design) misses every paraphrase of a negative question.
    negative_similarity: float = 0.85
    # Fetch twice as many variants, up to this many rounds, while too few distinct FAQs come back.
    max_rounds: int = 5
    min_unique: int = 3
    # Below this confidence an FAQ is not offered at all: with all-MiniLM-L6-v2, unrelated English
    # questions score about 0.0-0.4 and paraphrases 0.6 and up (stackfaq DEV). For a Chinese query a
    # lexical (BM25) match lowers the bar, since this model matches Chinese mostly by its words; in
    # English a shared "how long ... take" must not carry an FAQ about something else (0.40 cosine).
    min_score: float = 0.55
    min_score_with_lexical: float = 0.35
    # Where the embedder is not trusted for the query's language, an FAQ is offered only when its questions hold
    # the query's content words (function words such as 的, 是, 什么, 吗 never count), at least this share of what
    # the best-matching FAQ holds (weighted by rarity among the FAQs found): "可以远程办公吗？" is not offered the
    # office-address FAQ for its 办公 beside the remote-work FAQ that holds 远程 and 办公 (issue 18).
    lexical_keep_ratio: float = 0.5
    # Order of the offered FAQs: weighted RRF of the vector and BM25 ranks, by query language.
    weights: Mapping[Language, Mapping[str, float]] = field(default_factory=_default_weights)
    rrf_k: int = RRF_K


@dataclass(frozen=True, slots=True)
class _Evidence:
    positive: float | None = None
    negative: float = 0.0
    vector_rank: int | None = None
    bm25_rank: int | None = None


def _bigrams(text: str) -> set[str]:
    kept = "".join(char for char in text.casefold() if char.isalnum())
    return {kept[i : i + 2] for i in range(len(kept) - 1)} or ({kept} if kept else set())


def bigram_dice(a: str, b: str) -> float:
    """Dice coefficient of the two texts' character bigrams (letters and digits only, case-folded), in [0, 1]."""
    first, second = _bigrams(a), _bigrams(b)
    if not first or not second:
        return 0.0
    return 2 * len(first & second) / (len(first) + len(second))


def _questions(faq: FaqRecord) -> list[str]:
    return [faq.question, *faq.similar_questions]


def _texts(faq: FaqRecord) -> list[str]:
    return [faq.question, *faq.similar_questions, *faq.answers]


class FaqSearch:
    """Finds the FAQs that answer a query.

    `score` is the best positive variant's cosine similarity; the confidence the direct-answer threshold reads
    (`faq_confidence`) is that cosine where the embedder serves the query's language and the question's
    character overlap with the FAQ's questions where it does not. The order is a weighted RRF of the vector and
    BM25 ranks, so that a language the embedder serves badly is carried by its words.
    """

    def __init__(
        self,
        index: SearchIndex,
        faqs: FaqRepo,
        lexical: LexicalAnalyzer,
        embedder: Embedder,
        config: FaqSearchConfig | None = None,
    ) -> None:
        self._index = index
        self._faqs = faqs
        self._lexical = lexical
        self._embedder = embedder
        self.config = config or FaqSearchConfig()
        # An FAQ's words are read once per content (the record is the key): a bank's FAQs come back turn after
        # turn, and cutting their answers is the slow part (~150 ms for 30 long StackFAQ entries, 0.2 ms after).
        self._words: Callable[[FaqRecord], FaqWords] = functools.lru_cache(maxsize=_REMEMBERED_FAQS)(self._read)

    async def search(self, query: str, vector: Vector, kb_ids: Sequence[str]) -> list[Candidate]:
        """Enabled FAQs matching `query`, best first, with vetoed ones removed."""
        if not kb_ids:
            return []
        evidence = await self._evidence(query, vector, kb_ids)
        records = {faq.id: faq for faq in await self._faqs.by_ids(list(evidence))}
        evidence = await self._complete(vector, evidence, records)
        language = language_of(query)
        kept = {
            faq_id: faq
            for faq_id, found in evidence.items()
            if (faq := records.get(faq_id)) is not None
            and faq.enabled
            and not self._vetoed(query, faq, found)
            and self._relevant(found, language)
        }
        if not self._trusts_vectors(language):
            kept = await asyncio.to_thread(self._worded, query, kept)
        verbatim: set[str] = set()
        if kept:
            verbatim = await asyncio.to_thread(self._carrying, query, list(kept.values()), list(records.values()))
        offered = {}
        for faq_id, faq in kept.items():
            found = evidence[faq_id]
            legs = frozenset({"faq", "bm25"} if found.bm25_rank is not None else {"faq"})
            offered[faq_id] = faq_candidate(
                faq,
                score=found.positive or 0.0,
                legs=legs,
                confidence=self._confidence(query, faq, found, language),
                verbatim=faq_id in verbatim,
            )
        order = self._order(query, {faq_id: evidence[faq_id] for faq_id in offered})
        return [offered[faq_id] for faq_id in order]

    async def by_ids(self, faq_ids: Sequence[str], kb_ids: Sequence[str], *, legs: frozenset[str]) -> list[Candidate]:
        """Enabled FAQs among `faq_ids` that belong to `kb_ids`, as candidates scored 0 (the caller ranks them)."""
        if not faq_ids:
            return []
        records = await self._faqs.by_ids(list(faq_ids))
        return [faq_candidate(faq, score=0.0, legs=legs) for faq in records if faq.enabled and faq.kb_id in kb_ids]

    def _order(self, query: str, evidence: Mapping[str, _Evidence]) -> list[str]:
        rankings: dict[str, list[str]] = {}
        for leg in ("vector", "bm25"):
            ranked = [
                (rank, faq_id)
                for faq_id, found in evidence.items()
                if (rank := found.vector_rank if leg == "vector" else found.bm25_rank) is not None
            ]
            rankings[leg] = [faq_id for _, faq_id in sorted(ranked)]
        weights = self.config.weights[language_of(query)]
        fused = [faq_id for faq_id, _ in rrf(rankings, k=self.config.rrf_k, weights=weights)]
        # FAQs no weighted leg found (say, vector-only while the vector leg weighs 0) keep their confidence order.
        rest = sorted(set(evidence) - set(fused), key=lambda faq_id: -(evidence[faq_id].positive or 0.0))
        return fused + rest

    def _confidence(self, query: str, faq: FaqRecord, found: _Evidence, language: Language) -> float:
        """How surely this FAQ is the answer: the cosine where the embedder is trusted for the language (its
        vector leg weighs more than 0), else how nearly the query repeats one of the FAQ's questions.

        The default embedder is English-only: on bq-faq DEV a Chinese question clears 0.9 cosine with 14 % of its
        true FAQs but also with 5.5 % of its labelled non-matches, and 14 % of queries matching no FAQ at all
        would have been answered verbatim. Character-bigram overlap of 0.7 or more held no labelled non-match.
        """
        if self._trusts_vectors(language):
            return found.positive or 0.0
        # On the whole text, function words included: measured on bq-faq DEV, the overlap of the content words alone
        # answered 1.5 % of the queries matching no FAQ verbatim (0.5 % this way). Function words carry no match
        # here all the same: an FAQ sharing no content word with the query is not offered at all (`_worded`).
        return max(bigram_dice(query, question) for question in _questions(faq))

    def _trusts_vectors(self, language: Language) -> bool:
        """Whether the vector leg counts for FAQs in `language` (its weight is above 0)."""
        return self.config.weights[language].get("vector", 1.0) > 0

    def _worded(self, query: str, kept: Mapping[str, FaqRecord]) -> dict[str, FaqRecord]:
        """The FAQs whose questions hold the query's content terms, each at least `lexical_keep_ratio` of the best
        one's share (terms weighted by rarity among these FAQs)."""
        wanted = content_terms(query, self._lexical.tokens)
        held = {
            faq_id: wanted & {term for question in _questions(faq) for term in self._lexical.tokens(question)}
            for faq_id, faq in kept.items()
        }
        frequency = Counter(term for terms in held.values() for term in terms)
        weight = {term: math.log(1 + len(held) / count) for term, count in frequency.items()}
        share = {faq_id: sum(weight[term] for term in terms) for faq_id, terms in held.items()}
        best = max(share.values(), default=0.0)
        return {
            faq_id: faq
            for faq_id, faq in kept.items()
            if share[faq_id] > 0 and share[faq_id] >= self.config.lexical_keep_ratio * best
        }

    def _carrying(self, query: str, faqs: Sequence[FaqRecord], seen: Sequence[FaqRecord]) -> set[str]:
        """The FAQs that carry the query's names and numbers, in their questions or answers: only those may be
        given verbatim. Which lower-case words are names comes from how the FAQs `seen` for this query write them.
        """
        names = written_names(query, map(self._words, seen))
        wanted = distinctive_terms(query, self._lexical.tokens, names)
        return {faq.id for faq in faqs if carried(wanted, self._words(faq))}

    def _read(self, faq: FaqRecord) -> FaqWords:
        return faq_words(_texts(faq), self._lexical.tokens)

    def _relevant(self, found: _Evidence, language: Language) -> bool:
        lexical = found.bm25_rank is not None and language == "zh"
        bar = self.config.min_score_with_lexical if lexical else self.config.min_score
        return (found.positive or 0.0) >= bar

    def _vetoed(self, query: str, faq: FaqRecord, found: _Evidence) -> bool:
        key = question_key(query)
        if any(question_key(negative) == key for negative in faq.negative_questions):
            return True
        return found.negative >= self.config.negative_similarity and found.negative >= (found.positive or 0.0)

    async def _complete(
        self, vector: Vector, evidence: dict[str, _Evidence], records: Mapping[str, FaqRecord]
    ) -> dict[str, _Evidence]:
        """Cosine evidence for FAQs only BM25 found, from their variants' (cached) vectors."""
        missing = [faq_id for faq_id, found in evidence.items() if found.positive is None and faq_id in records]
        if not missing:
            return evidence
        texts = {
            faq_id: ([records[faq_id].question, *records[faq_id].similar_questions], records[faq_id].negative_questions)
            for faq_id in missing
        }
        flat = [text for positives, negatives in texts.values() for text in (*positives, *negatives)]
        # One rule for FAQ question variants: they are passages, what a query is matched against, at import, at
        # reindex and here (so these lookups hit the vectors stored at import); only the user's question is a query.
        vectors = iter(await self._embedder.embed(flat, kind="passage"))
        completed = dict(evidence)
        for faq_id, (positives, negatives) in texts.items():
            positive = max(cosine(vector, next(vectors)) for _ in positives)
            negative = max((cosine(vector, next(vectors)) for _ in negatives), default=0.0)
            completed[faq_id] = replace(
                evidence[faq_id], positive=positive, negative=max(negative, evidence[faq_id].negative)
            )
        return completed

    async def _evidence(self, query: str, vector: Vector, kb_ids: Sequence[str]) -> dict[str, _Evidence]:
        tokens = await asyncio.to_thread(self._lexical.bm25_text, query)
        limit = self.config.limit
        for _ in range(self.config.max_rounds):
            by_vector, by_text = await asyncio.gather(
                self._index.search_vector(Collection.FAQ_QUESTIONS, kb_ids, vector, limit),
                self._index.search_bm25(Collection.FAQ_QUESTIONS, kb_ids, tokens, limit),
            )
            evidence: dict[str, _Evidence] = {}
            for rank, hit in enumerate(by_vector, start=1):
                faq_id, kind = str(hit.properties["faq_id"]), str(hit.properties["kind"])
                old = evidence.get(faq_id, _Evidence())
                if kind == "negative":
                    evidence[faq_id] = replace(old, negative=max(old.negative, hit.score))
                else:
                    evidence[faq_id] = replace(
                        old, positive=max(old.positive or 0.0, hit.score), vector_rank=old.vector_rank or rank
                    )
            for rank, hit in enumerate(by_text, start=1):
                faq_id = str(hit.properties["faq_id"])
                if str(hit.properties["kind"]) == "negative":
                    continue
                old = evidence.get(faq_id, _Evidence())
                evidence[faq_id] = replace(old, bm25_rank=old.bm25_rank or rank)
            # Many variants of one popular FAQ can crowd out the rest: widen until enough distinct FAQs.
            if len(evidence) >= self.config.min_unique or len(by_vector) < limit:
                return evidence
            limit *= 2
        return evidence
