"""Answering one question: check it, run the named pipeline, hand back the turn with its answer stream."""

from __future__ import annotations

from collections.abc import Sequence

from bot.services import Services
from rag.faq_search import FaqSearch
from rag.input_check import check_question
from rag.pipeline import Pipeline, TurnContext
from rag.pipelines import PipelineParts, chat_stream, rag_stream, search_pipeline
from rag.retrieval import Retriever
from rag.rewrite import LlmRewriter, Rewriter
from rag.rewrite_rules import RuleRewriter
from rag.stages import answer_once


def pipeline_parts(services: Services) -> PipelineParts:
    """The pipelines' parts over the running services, configured by their settings."""
    settings = services.settings
    rewriter: Rewriter | None = None
    if settings.QUERY_REWRITE:
        rewriter = LlmRewriter(services.chat_model) if services.chat_model else RuleRewriter()
    return PipelineParts(
        retriever=Retriever(
            services.store,
            services.embedder,
            services.lexical,
            services.documents,
            services.faqs,
            settings.retrieval(),
            questions=services.embedder.transient,
        ),
        faqs=FaqSearch(services.store, services.faqs, services.lexical, services.embedder, settings.faq_search()),
        history=services.conversations,
        merge_source=services.documents,
        tokens=services.tokens,
        rewriter=rewriter,
        reranker=services.reranker,
        model=services.chat_model,
        search=settings.search(),
        rerank=settings.rerank(),
        answer=settings.answer(),
        history_config=settings.history(),
        observe=services.stage_metrics.observe,
    )


class Answerer:
    """Builds the pipelines once and answers questions over given knowledge bases."""

    def __init__(self, parts: PipelineParts) -> None:
        self.parts = parts
        self.rag_stream = rag_stream(parts)
        self.search = search_pipeline(parts)
        self.chat_stream = chat_stream(
            parts.tokens,
            parts.model,
            history=parts.history,
            history_config=parts.history_config,
            observe=parts.observe,
        )

    @classmethod
    def over(cls, services: Services) -> Answerer:
        """The Answerer over the running services."""
        return cls(pipeline_parts(services))

    async def run(
        self,
        question: str,
        kb_ids: Sequence[str],
        history: Sequence[tuple[str, str]] = (),
        *,
        conversation_id: str = "",
        document_ids: Sequence[str] = (),
        pipeline: Pipeline | None = None,
    ) -> TurnContext:
        """The turn after the pipeline ran; a question that fails the input check gets its refusal as answer.

        With `conversation_id`, LOAD_HISTORY reads the earlier rounds of that stored conversation (replacing
        `history`); store the question first (bot.turns.TurnRecorder.begin), as it is not a round yet.
        """
        check = check_question(question)
        turn = TurnContext(
            query=check.text,
            kb_ids=tuple(kb_ids),
            conversation_id=conversation_id,
            document_ids=tuple(document_ids),
            history=list(history),
        )
        if not check.ok:
            turn.outcome = "refused"
            turn.answer = answer_once(check.refusal or "")
            return turn
        return await (pipeline or self.rag_stream).run(turn)
