"""The RERANK stage: reranker scores, threshold with history leniency, composite re-score, then MMR."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from rag.errors import RerankerError
from rag.followup import leans_on_history
from rag.fusion import lenient_to_history, mmr, select_above
from rag.language import language_of
from rag.lexical import LexicalAnalyzer
from rag.pipeline import TurnContext
from rag.ports import Reranker
from rag.relevance import RerankConfig, kept_in_order, model_score, model_scores
from rag.types import Vector

log = logging.getLogger(__name__)


def judged_question(turn: TurnContext) -> tuple[str, Vector | None]:
    """What the candidates are judged against, and its vector when known.

    A follow-up is judged in the conversation it continues: the previous question with this one. "Which is more
    important?" says too little on its own for any passage to fit it, even when the rewriter could not resolve it.
    On mtrag-un (DEV), judging whole chunks at a 0.45 floor, this declined fewer answerable turns (7.0% -> 4.2%)
    and more unanswerable ones (40.8% -> 46.9%) (bench/decline.py).
    """
    if turn.history and leans_on_history(turn.query, turn.rewritten):
        return f"{turn.history[-1][0].strip()} {turn.search_query}", None
    return turn.search_query, turn.query_vector


class Rerank:
    """Reads search_query, query_vector, candidates; writes reranked."""

    name = "RERANK"

    def __init__(self, reranker: Reranker | None, lexical: LexicalAnalyzer, config: RerankConfig | None = None) -> None:
        self._reranker = reranker
        self._lexical = lexical
        self._config = config or RerankConfig()

    async def run(self, turn: TurnContext) -> str:
        if self._reranker is None:
            return "skipped=no_reranker"
        if not turn.candidates:
            return "skipped=no_candidates"
        config = self._config
        language = language_of(turn.search_query)
        if config.languages is not None and language not in config.languages:
            return f"skipped=language_{language}"
        question, vector = judged_question(turn)
        try:
            scores = await model_scores(self._reranker, question, turn.candidates, vector)
        except RerankerError as exc:
            # Designed fallback: the answer goes on with the retrieval order (FILTER_TOP_K reads candidates).
            log.warning("rerank=skipped model=%s reason=%s", self._reranker.model_id, exc)
            return "skipped=reranker_error"
        turn.judged = True
        judged = [replace(c, model_score=s) for c, s in zip(turn.candidates, scores, strict=True)]
        kept, used = select_above(
            judged, threshold=config.threshold, floor=config.floor, score=model_score, threshold_of=lenient_to_history
        )
        rescored = kept_in_order(kept, config)
        # jieba tokenising is CPU work: off the event loop.
        turn.reranked = await asyncio.to_thread(
            mmr, rescored, tokens=self._token_set, k=config.top_k, lambda_=config.mmr_lambda
        )
        return f"model={self._reranker.model_id} threshold={used:g} kept={len(kept)} out={len(turn.reranked)}"

    def _token_set(self, text: str) -> set[str]:
        return set(self._lexical.tokens(text))
