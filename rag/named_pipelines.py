"""The named pipelines: rag_stream answers a question, search returns the sources alone, chat_stream just talks."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from rag.config import AnswerConfig
from rag.faq.search import FaqSearch
from rag.history import HistoryConfig, HistorySource
from rag.merge import MergeConfig, MergeSource
from rag.pipeline import Pipeline, Stage, StageObserver
from rag.plain_chat import chat_config
from rag.ports import ChatModel, Reranker
from rag.relevance import RerankConfig
from rag.retrieval import Retriever
from rag.rewrite import Rewriter
from rag.stages.data_analysis import DataAnalysis, TableParts
from rag.stages.filter_top_k import FilterTopK
from rag.stages.generate import Generate
from rag.stages.into_chat_message import IntoChatMessage
from rag.stages.load_history import LoadHistory
from rag.stages.merge import Merge
from rag.stages.rerank import Rerank
from rag.stages.rewrite_query import RewriteQuery
from rag.stages.search import Search, SearchConfig, SearchLeg
from rag.stages.stream_answer import StreamAnswer
from rag.tokens import TokenCounter


@dataclass(frozen=True, slots=True)
class PipelineParts:
    """Everything the pipelines are made of; `None` means that part is off (no rewriting, reranker, model)."""

    retriever: Retriever
    faqs: FaqSearch
    history: HistorySource
    merge_source: MergeSource
    tokens: TokenCounter
    rewriter: Rewriter | None
    reranker: Reranker | None
    model: ChatModel | None
    search: SearchConfig = field(default_factory=SearchConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    merge: MergeConfig = field(default_factory=MergeConfig)
    answer: AnswerConfig = field(default_factory=AnswerConfig)
    history_config: HistoryConfig = field(default_factory=HistoryConfig)
    # Searches beside the chunk search (web, knowledge graph), run in parallel with it.
    legs: tuple[SearchLeg, ...] = ()
    # Questions over spreadsheets answered with SQL on their rows (DATA_ANALYSIS); None: off.
    tables: TableParts | None = None
    observe: StageObserver | None = None


def _retrieval_stages(parts: PipelineParts) -> list[Stage]:
    return [
        LoadHistory(parts.history, parts.history_config),
        RewriteQuery(parts.rewriter),
        Search(parts.retriever, parts.faqs, parts.search, parts.legs),
        Rerank(parts.reranker, parts.retriever.lexical, parts.rerank),
        Merge(parts.merge_source, parts.merge),
        FilterTopK(parts.search.top_k),
    ]


def search_pipeline(parts: PipelineParts) -> Pipeline:
    """History, rewrite, search, rerank, merge, top k: the sources a question would be answered from."""
    return Pipeline("search", _retrieval_stages(parts), parts.observe)


def rag_stream(parts: PipelineParts) -> Pipeline:
    """The whole answer: the search pipeline, the prompt, the answer, and its delivery piece by piece."""
    return Pipeline(
        "rag_stream",
        [
            *_retrieval_stages(parts),
            *([DataAnalysis(parts.model, parts.tables)] if parts.tables is not None else []),
            IntoChatMessage(parts.tokens, parts.answer),
            # The extractive answer cuts sentences with the BM25 analyzer, without filling its remembered terms.
            Generate(parts.model, parts.answer, terms=partial(parts.retriever.lexical.tokens, remember=False)),
            StreamAnswer(),
        ],
        parts.observe,
    )


def chat_stream(
    tokens: TokenCounter,
    model: ChatModel | None,
    *,
    history: HistorySource,
    history_config: HistoryConfig | None = None,
    observe: StageObserver | None = None,
) -> Pipeline:
    """A plain conversation without retrieval; without a model, a polite note that it needs one."""
    config = chat_config(model)
    return Pipeline(
        "chat_stream",
        [
            LoadHistory(history, history_config),
            IntoChatMessage(tokens, config),
            Generate(model, config),
            StreamAnswer(),
        ],
        observe,
    )
