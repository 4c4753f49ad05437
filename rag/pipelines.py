"""The named pipelines: rag_stream answers a question, search returns the sources alone."""

from __future__ import annotations

from rag.faq_search import FaqSearch
from rag.pipeline import Pipeline
from rag.ports import ChatModel
from rag.retrieval import Retriever
from rag.rewrite import Rewriter
from rag.stages import AnswerConfig, FilterTopK, Generate, IntoChatMessage, RewriteQuery, Search
from rag.tokens import TokenCounter


def search_pipeline(retriever: Retriever, faqs: FaqSearch, rewriter: Rewriter) -> Pipeline:
    """Rewrite, search, keep the top k: the sources a question would be answered from."""
    return Pipeline(
        "search",
        [RewriteQuery(rewriter), Search(retriever, faqs), FilterTopK(retriever.config.top_k)],
    )


def rag_stream(
    retriever: Retriever,
    faqs: FaqSearch,
    rewriter: Rewriter,
    tokens: TokenCounter,
    model: ChatModel | None,
    config: AnswerConfig,
) -> Pipeline:
    """The whole answer: search as above, then the prompt and a streamed (or extractive) answer."""
    return Pipeline(
        "rag_stream",
        [
            RewriteQuery(rewriter),
            Search(retriever, faqs),
            FilterTopK(retriever.config.top_k),
            IntoChatMessage(tokens, config),
            Generate(model, config),
        ],
    )
