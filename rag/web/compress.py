"""Web results as passages ranked for a query, chosen round robin per site and consolidated per URL (pure, no I/O).

WeKnora's web search compression: results become passages of a temporary knowledge base, the rewritten query is
searched in it (hybrid), references are chosen round robin so every site gets a say, and each URL's passages are
joined into one reference. Here the "knowledge base" is the conversation's passages in memory (rag.web.scratch)
and the hybrid search is this module's BM25 and cosine legs fused by RRF, as the chunk search fuses its own.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from rag.fusion import rrf
from rag.types import Vector
from rag.web.types import WebResult

# Passages about the size of a chunk of the knowledge base (rag.ingest's recursive splitter defaults to ~800).
PASSAGE_CHARS = 800
# Okapi BM25's usual constants (Robertson & Zaragoza 2009, "The Probabilistic Relevance Framework"); Weaviate's too.
BM25_K1 = 1.2
BM25_B = 0.75


@dataclass(frozen=True, slots=True)
class WebPassage:
    """A piece of one result: its snippet (title and snippet) or a piece of the fetched page."""

    id: str
    url: str
    title: str
    text: str

    @property
    def site(self) -> str:
        """The host the passage came from: the unit round robin takes turns by."""
        return (urlsplit(self.url).hostname or self.url).removeprefix("www.")


@dataclass(frozen=True, slots=True)
class WebReference:
    """One URL's chosen passages joined, with the best fused score among them."""

    url: str
    title: str
    text: str
    score: float
    passage_ids: tuple[str, ...]


def passages_of(result: WebResult, page_text: str = "") -> list[WebPassage]:
    """The result's snippet passage, then its page text in pieces of about PASSAGE_CHARS (none when not fetched)."""
    head = f"{result.title}\n{result.snippet}".strip()
    found = [WebPassage(f"{result.url}#0", result.url, result.title, head)]
    for number, piece in enumerate(_pieces(page_text), start=1):
        found.append(WebPassage(f"{result.url}#{number}", result.url, result.title, piece))
    return found


def _pieces(text: str) -> list[str]:
    """Paragraphs packed into pieces of at most PASSAGE_CHARS; a longer paragraph is cut at that length."""
    pieces: list[str] = []
    current = ""
    for paragraph in (" ".join(p.split()) for p in text.split("\n")):
        while len(paragraph) > PASSAGE_CHARS:
            if current:
                pieces.append(current)
                current = ""
            pieces.append(paragraph[:PASSAGE_CHARS])
            paragraph = paragraph[PASSAGE_CHARS:]
        if not paragraph:
            continue
        if current and len(current) + 1 + len(paragraph) > PASSAGE_CHARS:
            pieces.append(current)
            current = ""
        current = f"{current}\n{paragraph}" if current else paragraph
    if current:
        pieces.append(current)
    return pieces


def bm25_scores(query: Sequence[str], documents: Sequence[Sequence[str]]) -> list[float]:
    """Okapi BM25 of each tokenised document for the tokenised query, over these documents as the corpus."""
    if not documents:
        return []
    frequency = Counter(term for document in documents for term in set(document))
    average = sum(len(document) for document in documents) / len(documents) or 1.0
    count = len(documents)
    scores = []
    for document in documents:
        terms = Counter(document)
        score = 0.0
        for term in set(query):
            if term not in terms:
                continue
            idf = math.log(1 + (count - frequency[term] + 0.5) / (frequency[term] + 0.5))
            tf = terms[term]
            score += idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * len(document) / average))
        scores.append(score)
    return scores


def cosine(a: Vector, b: Vector) -> float:
    """Cosine similarity; 0 for a zero vector."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0


def passage_tokens(passage: WebPassage, tokens: Callable[[str], list[str]]) -> list[str]:
    """The words BM25 matches a passage by: its title's and its text's."""
    return tokens(f"{passage.title} {passage.text}")


def rank_passages(
    query_tokens: Sequence[str],
    query_vector: Vector | None,
    passages: Sequence[WebPassage],
    terms: Sequence[Sequence[str]],
    vectors: Sequence[Vector | None],
) -> list[tuple[WebPassage, float]]:
    """Passages matching the query by words or by meaning, best first, scored by RRF of the two legs.

    `terms` and `vectors` are the passages' words and embeddings, in order (computed once, when they were found).
    """
    by_id = {passage.id: passage for passage in passages}
    words = bm25_scores(query_tokens, terms)
    lexical = [p.id for p, score in sorted(zip(passages, words, strict=True), key=lambda x: -x[1]) if score > 0]
    legs = {"bm25": lexical}
    if query_vector is not None:
        meaning = [(p.id, cosine(query_vector, v)) for p, v in zip(passages, vectors, strict=True) if v is not None]
        legs["vector"] = [pid for pid, _ in sorted(meaning, key=lambda x: -x[1])]
    return [(by_id[pid], score) for pid, score in rrf(legs)]


def round_robin(ranked: Sequence[tuple[WebPassage, float]], limit: int) -> list[tuple[WebPassage, float]]:
    """Up to `limit` passages taken one per site in turn, each site's best first, sites in order of their best."""
    queues: dict[str, list[tuple[WebPassage, float]]] = {}
    for item in ranked:
        queues.setdefault(item[0].site, []).append(item)
    chosen: list[tuple[WebPassage, float]] = []
    while len(chosen) < limit and any(queues.values()):
        for queue in queues.values():
            if queue and len(chosen) < limit:
                chosen.append(queue.pop(0))
    return chosen


def consolidate(chosen: Sequence[tuple[WebPassage, float]]) -> list[WebReference]:
    """One reference per URL, its passages in page order, ordered by each URL's best score."""
    by_url: dict[str, list[tuple[WebPassage, float]]] = {}
    for item in chosen:
        by_url.setdefault(item[0].url, []).append(item)
    references = []
    for url, items in by_url.items():
        ordered = sorted(items, key=lambda item: _order(item[0].id))
        references.append(
            WebReference(
                url=url,
                title=items[0][0].title,
                text="\n…\n".join(passage.text for passage, _ in ordered),
                score=max(score for _, score in items),
                passage_ids=tuple(passage.id for passage, _ in ordered),
            )
        )
    return sorted(references, key=lambda reference: -reference.score)


def _order(passage_id: str) -> int:
    return int(passage_id.rpartition("#")[2] or 0)
