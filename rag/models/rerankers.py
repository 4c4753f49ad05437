"""Rerankers: a Jina/Cohere-compatible `/rerank` API, and the local jieba TF-IDF + embedding cosine scorer."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import aiohttp
import jieba
import numpy as np

from rag.errors import EmbedderUnavailable, ModelError, RerankerError
from rag.lexical import LexicalAnalyzer
from rag.ports import Embedder, EmbedKind, Reranker
from rag.types import KnownVectors, Vector
from rag.windows import passage_windows

log = logging.getLogger(__name__)

# jieba's bundled IDF table, the one jieba.analyse.TFIDF loads. Read directly: importing jieba.analyse builds its
# default extractors at import time (~1.5 s) for nothing this module uses.
JIEBA_IDF_PATH = Path(jieba.__file__).parent / "analyse" / "idf.txt"
# The vector side leads because the embedding sees paraphrases, which is what reranking retrieval output is for; the
# lexical side keeps exact terms (product names, codes) that a small embedder blurs. 0.7/0.3 is the same split as
# Weaviate's default hybrid alpha (0.7 vector, per haystack's WeaviateHybridRetriever docs).
LEXICAL_WEIGHT = 0.3
VECTOR_WEIGHT = 0.7
# The weighted cosine sits lower than a cross-encoder's relevance, for which RERANK's threshold (0.5, relaxed to
# a 0.3 floor) was made. Measured on the DEV sets (80 queries each, the labelled passage against a random one):
# relevant passages score p10 0.30 / median 0.47 (scifact) and p10 0.25 / median 0.38 (cmrc2018) raw, random ones
# p90 0.18 and 0.30. Dividing by 0.6 puts a typical relevant passage above 0.5 and most random ones below 0.3.
CALIBRATION = 1 / 0.6
# The score below which no passage fits and the turn declines: RERANK's threshold itself, not relaxed below it. On
# mtrag-un (DEV, human conversations with labelled unanswerable turns; bench/decline.py, the leading candidates also
# judged by their best window) the old 0.3 floor declined 4% of the unanswerable turns and 1% of the answerable
# ones; 0.5 declines about 35% and 5%, 0.55 about 47% and 6%, but 0.55 also declined plain handbook questions of
# eval/team ("When do I need a doctor's note?"), and a wrong "found nothing" on a team's own documents costs more.
LOCAL_DECLINE_FLOOR = 0.5
# How many of the leading candidates are also judged by their best window of a few sentences: a long chunk (a
# README table, a policy page) whose one row answers must not be judged as if the question were about all of it.
WINDOWED = 5
_ERROR_SNIPPET = 200


@dataclass(frozen=True, slots=True)
class RerankerConfig:
    """Which reranker scores candidates, and how to reach (api) or weigh (local) it."""

    provider: Literal["none", "local", "api"] = "none"
    base_url: str | None = None
    api_key: str | None = None
    model: str = ""
    # The user is waiting on this call; a slow reranker is skipped rather than waited for.
    timeout: float = 10.0
    # Bounds the request body only: every rerank service cuts documents to its model's window anyway.
    max_chars: int = 4096
    # One 429 is retried when the server asks for at most this long; a longer wait is worse than not reranking.
    max_retry_wait: float = 2.0
    lexical_weight: float = LEXICAL_WEIGHT
    vector_weight: float = VECTOR_WEIGHT

    def __post_init__(self) -> None:
        _check_weights(self.lexical_weight, self.vector_weight)
        if self.timeout <= 0:
            raise ValueError(f"reranker timeout must be > 0, got {self.timeout}")
        if self.max_chars < 1:
            raise ValueError(f"reranker max_chars must be >= 1, got {self.max_chars}")
        if self.provider == "api" and not (self.base_url and self.model):
            raise ValueError("reranker provider 'api' needs a base_url and a model")


def _check_weights(lexical_weight: float, vector_weight: float) -> None:
    if not (0.0 <= lexical_weight <= 1.0 and 0.0 <= vector_weight <= 1.0):
        raise ValueError(f"reranker weights must be in [0, 1], got {lexical_weight} and {vector_weight}")
    if not math.isclose(lexical_weight + vector_weight, 1.0, abs_tol=1e-9):
        raise ValueError(f"reranker weights must sum to 1, got {lexical_weight} + {vector_weight}")


def build_reranker(config: RerankerConfig, embedder: Embedder, lexical: LexicalAnalyzer) -> Reranker | None:
    """The reranker the configuration names, or None when reranking is off."""
    if config.provider == "api":
        return ApiReranker(config)
    if config.provider == "local":
        return LocalReranker(
            embedder, lexical, lexical_weight=config.lexical_weight, vector_weight=config.vector_weight
        )
    return None


# --- API ----------------------------------------------------------------------------------------------------------


def rerank_url(base_url: str) -> str:
    """The endpoint to POST to: `base_url` itself when it already ends in /rerank, else `base_url` + /rerank.

    So the OpenAI-style base URL (`https://api.jina.ai/v1`, `https://api.cohere.com/v2`) and a full endpoint URL
    (`http://host:8000/rerank`, `.../v1/rerank`) both work.
    """
    url = base_url.rstrip("/")
    return url if url.endswith("/rerank") else f"{url}/rerank"


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:  # an HTTP date: rare for APIs, and not worth waiting on
        return None


def _snippet(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace").strip()
    return text[:_ERROR_SNIPPET] or "(empty body)"


def parse_rerank_results(raw: bytes, count: int) -> list[float]:
    """The scores, in document order, from a Jina/Cohere answer `{"results": [{"index", "relevance_score"}]}`.

    Raises RerankerError unless the body is JSON naming every index in [0, count) exactly once with a finite score.
    """
    try:
        payload: Any = json.loads(raw)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
        raise RerankerError(f"reranker answer is not JSON: {exc}") from exc
    results = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(results, list):
        raise RerankerError(f"reranker answer has no 'results' list: {_snippet(raw)}")
    scores: dict[int, float] = {}
    for item in results:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score") if isinstance(item, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count or index in scores:
            raise RerankerError(f"reranker answered index {index!r} for {count} documents")
        if not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score):
            raise RerankerError(f"reranker answered relevance_score {score!r} for document {index}")
        scores[index] = float(score)
    if len(scores) != count:
        missing = sorted(set(range(count)) - scores.keys())
        raise RerankerError(f"reranker left out documents {missing[:5]} of {count}")
    return [scores[index] for index in range(count)]


class ApiReranker:
    """A Jina/Cohere-compatible `/rerank` endpoint (Jina, Cohere v1/v2, vLLM, Xinference) over aiohttp."""

    def __init__(self, config: RerankerConfig, *, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        if not config.base_url:
            raise ValueError("ApiReranker needs a base_url")
        self._url = rerank_url(config.base_url)
        self._model = config.model
        self._api_key = config.api_key
        self._timeout = config.timeout
        self._max_chars = config.max_chars
        self._max_retry_wait = config.max_retry_wait
        self._sleep = sleep
        self._session: aiohttp.ClientSession | None = None

    @property
    def model_id(self) -> str:
        """The model's name."""
        return self._model

    async def rerank(self, query: str, texts: Sequence[str], vectors: KnownVectors | None = None) -> list[float]:
        """One score per text, in order; retries one 429 whose Retry-After is short, else raises RerankerError.

        `vectors` are not used: the service reads the texts.
        """
        if not texts:
            return []
        body = {
            "model": self._model,
            "query": query,
            "documents": [text[: self._max_chars] for text in texts],
            "top_n": len(texts),
        }
        try:
            return await self._post(body, len(texts))
        except RerankerError as exc:
            wait = self._retry_wait(exc)
            if wait is None:
                raise
        log.info("reranker=rate_limited retry_after=%.2f", wait)
        await self._sleep(wait)
        return await self._post(body, len(texts))

    def _retry_wait(self, exc: RerankerError) -> float | None:
        """How long to wait before the one retry: only for a 429 that names a short enough Retry-After."""
        if exc.status == 429 and exc.retry_after is not None and 0 <= exc.retry_after <= self._max_retry_wait:
            return exc.retry_after
        return None

    async def close(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _open(self) -> aiohttp.ClientSession:
        # Made on first use, inside the running loop, as aiohttp requires.
        if self._session is None:
            headers = {"Accept": "application/json"}
            if self._api_key:
                headers["Authorization"] = f"Bearer {self._api_key}"
            self._session = aiohttp.ClientSession(headers=headers, timeout=aiohttp.ClientTimeout(total=self._timeout))
        return self._session

    async def _post(self, body: Mapping[str, object], count: int) -> list[float]:
        session = self._open()
        try:
            async with session.post(self._url, json=body) as response:
                raw = await response.read()
                status = response.status
                retry_after = _retry_after(response.headers.get("Retry-After"))
        except TimeoutError as exc:  # aiohttp's own timeout errors subclass it too
            raise RerankerError(f"reranker timed out after {self._timeout:g}s") from exc
        except aiohttp.ClientError as exc:
            raise RerankerError(f"reranker request failed: {type(exc).__name__}: {exc}") from exc
        if not 200 <= status < 300:
            raise RerankerError(f"reranker answered {status}: {_snippet(raw)}", status=status, retry_after=retry_after)
        return parse_rerank_results(raw, count)


# --- local --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IdfTable:
    """Inverse document frequencies by word, and the one used for words the table lacks."""

    weights: Mapping[str, float]
    default: float

    def of(self, word: str) -> float:
        """The word's IDF, or the default for an unknown word."""
        return self.weights.get(word, self.default)


def load_idf(path: Path = JIEBA_IDF_PATH, vocabulary: Iterable[str] = ()) -> IdfTable:
    """An IDF file of `word idf` lines; unknown words get the median, as jieba.analyse.TFIDF does (blocking).

    The table's words are `vocabulary`'s own string objects where it has them (the tokenizer's dictionary holds 95 %
    of jieba's), and equal values one float: the table then costs ~16 MB of the process instead of ~36 MB.
    """
    shared = {word: word for word in vocabulary}
    values: dict[str, float] = {}
    weights: dict[str, float] = {}
    with path.open(encoding="utf-8") as lines:  # line by line: each line's strings are freed before the next
        for line in lines:
            word, _, value = line.strip().partition(" ")
            if word and value:
                weights[shared.get(word, word)] = values.setdefault(value, float(value))
    if not weights:
        raise ValueError(f"{path} holds no IDF entries")
    median = sorted(weights.values())[len(weights) // 2]
    return IdfTable(weights, median)


def tfidf_cosine(query: Sequence[str], text: Sequence[str], idf: IdfTable) -> float:
    """Cosine of the two token lists' TF-IDF vectors (raw counts x IDF); in [0, 1], 0.0 when either is empty."""
    a = {word: count * idf.of(word) for word, count in Counter(query).items()}
    b = {word: count * idf.of(word) for word, count in Counter(text).items()}
    norms = math.sqrt(sum(w * w for w in a.values())) * math.sqrt(sum(w * w for w in b.values()))
    if norms == 0:
        return 0.0
    return sum(weight * b[word] for word, weight in a.items() if word in b) / norms


def _cosines(query: Sequence[float], texts: Sequence[Sequence[float]]) -> list[float]:
    matrix = np.asarray(texts, dtype=np.float64)
    vector = np.asarray(query, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(vector)
    dots = matrix @ vector
    return [float(dot / norm) if norm > 0 else 0.0 for dot, norm in zip(dots, norms, strict=True)]


class LocalReranker:
    """(lexical_weight x jieba TF-IDF cosine + vector_weight x max(0, embedding cosine)) x calibration, capped at 1."""

    def __init__(
        self,
        embedder: Embedder,
        lexical: LexicalAnalyzer,
        *,
        lexical_weight: float = LEXICAL_WEIGHT,
        vector_weight: float = VECTOR_WEIGHT,
        idf: IdfTable | None = None,
        calibration: float = CALIBRATION,
        windows: int = WINDOWED,
    ) -> None:
        _check_weights(lexical_weight, vector_weight)
        if calibration <= 0:
            raise ValueError(f"reranker calibration must be > 0, got {calibration}")
        self._calibration = calibration
        self._windows = windows
        self._embedder = embedder
        self._lexical = lexical
        self._lexical_weight = lexical_weight
        self._vector_weight = vector_weight
        self._idf = idf
        self._idf_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """`local:` and the embedder's model."""
        return f"local:{self._embedder.model_id}"

    async def rerank(self, query: str, texts: Sequence[str], vectors: KnownVectors | None = None) -> list[float]:
        """One score per text, in order; an embedder failure is raised as RerankerError.

        Only the vectors `vectors` lacks are embedded (through the caching embedder, in production).
        """
        if not texts:
            return []
        scores = await self._scores(query, texts, vectors)
        # Only the leading texts (retrieval's best) are cut: each window is one more embedding on the user's time.
        windows = [passage_windows(text) if i < self._windows else [] for i, text in enumerate(texts)]
        flat = [window for parts in windows for window in parts]
        if not flat:
            return scores
        query_vector = vectors.query if vectors is not None else None
        window_scores = iter(await self._scores(query, flat, KnownVectors(query_vector, [None] * len(flat))))
        return [
            max([score, *(next(window_scores) for _ in parts)]) for score, parts in zip(scores, windows, strict=True)
        ]

    async def _scores(self, query: str, texts: Sequence[str], vectors: KnownVectors | None) -> list[float]:
        lexical = [0.0] * len(texts)
        dense = [0.0] * len(texts)
        if self._lexical_weight > 0:
            lexical = await asyncio.to_thread(self._tfidf_scores, query, texts)
        if self._vector_weight > 0:
            dense = await self._vector_scores(query, texts, vectors)
        return [
            min(1.0, (self._lexical_weight * lex + self._vector_weight * max(0.0, cos)) * self._calibration)
            for lex, cos in zip(lexical, dense, strict=True)
        ]

    async def _vector_scores(self, query: str, texts: Sequence[str], known: KnownVectors | None) -> list[float]:
        # In production the embedder is the caching one: chunk vectors were stored at ingest, the query's at search.
        given: list[Vector | None] = [known.query, *known.texts] if known is not None else []
        if len(given) != len(texts) + 1:
            given = [None] * (len(texts) + 1)
        # The query is embedded as a query (after the model's query prompt, if any), the texts as passages.
        if given[0] is None:
            [given[0]] = await self._embed([query], "query")
        asked = [i for i in range(1, len(given)) if given[i] is None]
        if asked:
            for i, vector in zip(asked, await self._embed([texts[i - 1] for i in asked], "passage"), strict=True):
                given[i] = vector
        vectors = [vector for vector in given if vector is not None]
        return _cosines(vectors[0], vectors[1:])

    async def _embed(self, texts: Sequence[str], kind: EmbedKind) -> list[Vector]:
        try:
            found = await self._embedder.embed(texts, kind=kind)
        except (ModelError, EmbedderUnavailable) as exc:
            raise RerankerError(f"local reranker could not embed: {exc}") from exc
        if len(found) != len(texts):
            raise RerankerError(f"embedder returned {len(found)} vectors for {len(texts)} texts")
        return found

    def _tfidf_scores(self, query: str, texts: Sequence[str]) -> list[float]:
        idf = self._ensure_idf()
        query_tokens = self._lexical.tokens(query)
        return [tfidf_cosine(query_tokens, self._lexical.tokens(text), idf) for text in texts]

    def _ensure_idf(self) -> IdfTable:
        # 270k lines, ~0.6 s: loaded once, on the first rerank, in a worker thread.
        with self._idf_lock:
            if self._idf is None:
                self._idf = load_idf(vocabulary=self._lexical.vocabulary())
            return self._idf
