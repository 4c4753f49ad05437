"""Answering one question: check it, run the named pipeline, hand back the turn with its answer stream."""

from __future__ import annotations

from collections.abc import Sequence

from bot.services import Services
from rag.faq_search import FaqSearch
from rag.input_check import check_question
from rag.pipeline import Pipeline, TurnContext
from rag.pipelines import rag_stream, search_pipeline
from rag.retrieval import Retriever
from rag.rewrite import LlmRewriter, Rewriter
from rag.rewrite_rules import RuleRewriter
from rag.stages import AnswerConfig, answer_once


class Answerer:
    """Builds the pipelines once and answers questions over given knowledge bases."""

    def __init__(self, services: Services, config: AnswerConfig | None = None) -> None:
        retriever = Retriever(services.store, services.embedder, services.lexical, services.documents, services.faqs)
        faqs = FaqSearch(services.store, services.faqs, services.lexical)
        rewriter: Rewriter = LlmRewriter(services.chat_model) if services.chat_model else RuleRewriter()
        self.config = config or AnswerConfig()
        self.rag_stream = rag_stream(retriever, faqs, rewriter, services.tokens, services.chat_model, self.config)
        self.search = search_pipeline(retriever, faqs, rewriter)

    async def run(
        self,
        question: str,
        kb_ids: Sequence[str],
        history: Sequence[tuple[str, str]] = (),
        *,
        pipeline: Pipeline | None = None,
    ) -> TurnContext:
        """The turn after the pipeline ran; a question that fails the input check gets its refusal as answer."""
        check = check_question(question)
        turn = TurnContext(query=check.text, kb_ids=tuple(kb_ids), history=list(history))
        if not check.ok:
            turn.outcome = "refused"
            turn.answer = answer_once(check.refusal or "")
            return turn
        return await (pipeline or self.rag_stream).run(turn)
