"""Composition root: builds every part from Settings, starts them in order, stops them in reverse."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field

from bot.app.media import open_media_reader
from bot.app.preflight import check_settings
from bot.app.settings import Settings
from bot.app.web_search import build_web_leg, web_session
from bot.chat.answerer import Answerer
from bot.chat.media import MediaReader
from bot.chat.model_limit import LimitedChatModel
from bot.errors import StartupError, UserFacingError
from bot.knowledge.bases import KnowledgeBases
from bot.knowledge.index_lock import IndexLock
from bot.knowledge.ingestion import IngestionWork
from bot.knowledge.jobs import JobRunner, runner_id
from bot.knowledge.uploads import UploadFolder
from bot.metrics import ServiceMetrics
from bot.words.messages import index_outdated, vectors_foreign
from rag.errors import EmbedderUnavailable
from rag.faq.search import FaqSearch
from rag.graph.index import GraphIndexer, ModelExtraction
from rag.graph.leg import EntitySearch, GraphSwitches
from rag.graph.port import GraphStore
from rag.graph.question import ModelEntities, QuestionEntities, RuleEntities
from rag.ingest.documents import DocumentIngestor
from rag.ingest.faq_index import FaqImporter
from rag.ingest.sandbox import ExtractionSandbox
from rag.lexical import LexicalAnalyzer
from rag.models.chat import OpenAIChatModel
from rag.models.embedders import CachedEmbedder, OpenAIEmbedder, build_embedder, find_onnx_model, resolve_model_dir
from rag.models.identity import vector_model_id
from rag.models.rerankers import ApiReranker, build_reranker
from rag.named_pipelines import PipelineParts
from rag.ports import ChatModel, Reranker
from rag.retrieval import Retriever
from rag.rewrite import LlmRewriter, Rewriter
from rag.rewrite_rules import RuleRewriter
from rag.stages.data_analysis import TableParts
from rag.tokens import TokenCounter
from rag.web.leg import WebSearchLeg
from storage.db import Database
from storage.embedding_cache import SqlEmbeddingCache
from storage.errors import DatabaseUnavailable, IndexUnavailable, ReplicationFactorTooHigh, ServerInUse
from storage.graph.neo4j import GraphUnavailable, Neo4jGraph
from storage.repos.bindings import BindingRepo
from storage.repos.conversations import ConversationRepo
from storage.repos.documents import DocumentRepo
from storage.repos.faqs import FaqRepo
from storage.repos.graph import GraphRepo
from storage.repos.jobs import JobRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.repos.leases import LeaseRepo
from storage.repos.merge_reads import MergeReadRepo
from storage.repos.schedules import ScheduleRepo
from storage.tables.store import TableStore
from storage.weaviate.config import WeaviateEndpoint
from storage.weaviate.server import Restarted, WeaviateServer
from storage.weaviate.store import WeaviateStore, endpoints_from_urls

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Services:
    """The running parts, passed explicitly to whatever needs them."""

    settings: Settings
    db: Database
    store: WeaviateStore
    weaviate_server: WeaviateServer | None
    embedder: CachedEmbedder
    chat_model: OpenAIChatModel | None
    reranker: Reranker | None
    metrics: ServiceMetrics
    tokens: TokenCounter
    lexical: LexicalAnalyzer
    documents: DocumentRepo
    faqs: FaqRepo
    job_repo: JobRepo
    conversations: ConversationRepo
    knowledge: KnowledgeBases
    ingestor: DocumentIngestor
    faq_importer: FaqImporter
    jobs: JobRunner
    bindings: BindingRepo
    index_lock: IndexLock
    schedules: ScheduleRepo
    # CSV and spreadsheet rows as tables (data analysis), and the knowledge bases' switches for it.
    tables: TableStore
    knowledge_bases: KnowledgeBaseRepo
    # The entity graphs: Neo4j when NEO4J_URI is set, else the relational store's tables.
    graph: GraphStore
    # Which bases' graphs are on, shared by the entity leg and `/graph`, so a switch here counts at once here.
    graph_switches: GraphSwitches
    # Reads chunks into the graphs, at ingestion and at `/graph on` (with the chat model under GRAPH_MODEL_EXTRACTION).
    graph_indexer: GraphIndexer
    # Whose vectors this process writes and searches with (recorded on the index, compared at start).
    vector_model: str
    # Web search beside the knowledge base, when WEB_SEARCH_PROVIDER names a provider.
    web_leg: WebSearchLeg | None = None
    # Reads photos and voice messages sent as questions (OCR, the vision and speech models the settings name).
    media: MediaReader = field(default_factory=MediaReader)
    # Model calls at once (CHAT_MAX_CONCURRENT_MODEL_CALLS): answers, rewrites, and the media's vision and speech calls.
    model_slots: asyncio.Semaphore = field(kw_only=True)

    def ensure_vectors_match(self) -> None:
        """Stop a command that embeds or searches while the index holds another embedding model's vectors."""
        for held in sorted(set(self.store.foreign_vectors().values())):
            raise UserFacingError(vectors_foreign(held, self.vector_model))

    # The pipelines, built once (the rule rewriter alone loads jieba for about a second).
    answerer: Answerer = field(init=False)


def pipeline_parts(services: Services) -> PipelineParts:
    """The pipelines' parts over the running services, configured by their settings."""
    settings = services.settings
    model: ChatModel | None = None
    if services.chat_model is not None:
        model = LimitedChatModel(services.chat_model, services.model_slots)
    rewriter: Rewriter | None = None
    if settings.QUERY_REWRITE:
        rewriter = LlmRewriter(model) if model else RuleRewriter()
    retriever = Retriever(
        services.store,
        services.embedder,
        services.lexical,
        services.documents,
        services.faqs,
        settings.retrieval(),
        questions=services.embedder.transient,
    )
    return PipelineParts(
        retriever=retriever,
        faqs=FaqSearch(services.store, services.faqs, services.lexical, services.embedder, settings.faq_search()),
        history=services.conversations,
        merge_source=MergeReadRepo(services.db),
        tokens=services.tokens,
        rewriter=rewriter,
        reranker=services.reranker,
        model=model,
        search=settings.search(),
        rerank=settings.rerank(),
        answer=settings.answer(),
        history_config=settings.history(),
        tables=TableParts(services.tables, services.knowledge_bases),
        observe=services.metrics.stages.observe,
        legs=(
            EntitySearch(
                services.graph, retriever, _question_entities(settings, model), switches=services.graph_switches
            ),
            *((services.web_leg,) if services.web_leg is not None else ()),
        ),
    )


def _question_entities(settings: Settings, model: ChatModel | None) -> QuestionEntities:
    if settings.GRAPH_MODEL_ENTITIES and model is not None:
        return ModelEntities(model)
    return RuleEntities()


def _graph_extraction(settings: Settings, model: ChatModel | None) -> ModelExtraction | None:
    if settings.GRAPH_MODEL_EXTRACTION and model is not None:
        return ModelExtraction(model)
    return None


async def _open_database(settings: Settings, stack: AsyncExitStack) -> Database:
    db = Database(settings.database())
    try:
        await db.open()
    except DatabaseUnavailable as exc:
        if settings.DATABASE_URL:
            raise StartupError(
                "DATABASE_URL",
                f"cannot open {exc.url}: {exc.reason}",
                "check host, credentials and that the database exists",
            ) from exc
        raise StartupError(
            "RAGBOT_DATA_DIR", f"cannot open the SQLite store: {exc.reason}", "choose a writable data folder"
        ) from exc
    stack.push_async_callback(db.close)
    return db


def _vector_model(settings: Settings) -> str:
    """The identity of the configured embedding model's vectors (its name, and for a local model its folder's)."""
    config = settings.embedder()
    if config.provider != "local":
        return config.model
    model_dir = resolve_model_dir(config)
    return vector_model_id(config.model, model_dir, find_onnx_model(model_dir))


async def _connect_remote_index(settings: Settings, stack: AsyncExitStack) -> WeaviateStore:
    assert settings.WEAVIATE_URL is not None
    config = settings.weaviate()
    try:
        store = await WeaviateStore.connect(
            endpoints_from_urls(settings.WEAVIATE_URL, settings.WEAVIATE_GRPC_URL), config
        )
    except ReplicationFactorTooHigh as exc:
        raise _too_few_nodes(exc) from exc
    except (IndexUnavailable, ValueError) as exc:
        raise StartupError(
            "WEAVIATE_URL", f"{exc}", "start that Weaviate, correct the URL, or unset WEAVIATE_URL to run one locally"
        ) from exc
    stack.push_async_callback(store.close)
    return store


def _too_few_nodes(exc: ReplicationFactorTooHigh) -> StartupError:
    return StartupError(
        "WEAVIATE_REPLICATION_FACTOR",
        f"{exc.factor} replicas of each object need {exc.factor} Weaviate nodes, but the cluster has {exc.nodes}",
        f"set WEAVIATE_REPLICATION_FACTOR to {exc.nodes} or less, or add Weaviate nodes (WEAVIATE_URL)",
    )


async def _start_local_index(settings: Settings, stack: AsyncExitStack) -> tuple[WeaviateServer | None, WeaviateStore]:
    server = WeaviateServer(settings.weaviate_server())
    owned: WeaviateServer | None = server
    try:
        endpoint = await server.start()
    except ServerInUse as exc:
        # `ragbot serve` owns the server on this data dir: admin commands share it.
        log.info("weaviate=attach reason=%s", exc)
        endpoint, owned = server.attach_endpoint(exc), None
    except IndexUnavailable as exc:
        raise StartupError("WEAVIATE_BINARY", str(exc), "see `ragbot doctor`") from exc
    if owned is not None:
        stack.push_async_callback(owned.stop)
    try:
        store = await WeaviateStore.connect(endpoint, settings.weaviate())
    except ReplicationFactorTooHigh as exc:
        raise _too_few_nodes(exc) from exc
    except IndexUnavailable as exc:
        raise StartupError("WEAVIATE_BINARY", str(exc), "see the server log in the data dir") from exc
    stack.push_async_callback(store.close)
    return owned, store


def _after_restart(store: WeaviateStore, knowledge: KnowledgeBases) -> Restarted:
    """What follows a restart of the local Weaviate after it died: the store talks to the new process, and what an
    ingestion cut by the death wrote to the index without committing is removed, as at a start."""

    async def restarted(endpoint: WeaviateEndpoint) -> None:
        await store.follow_restart(endpoint)
        await knowledge.repair_index()

    return restarted


async def _open_neo4j(settings: Settings, db: Database, stack: AsyncExitStack) -> Neo4jGraph | None:
    """The Neo4j graph store when NEO4J_URI is set, its constraints made; None keeps the graphs in SQL."""
    config = settings.neo4j()
    if config is None:
        return None
    graph = Neo4jGraph(config, GraphRepo(db), DocumentRepo(db).committed_chunk_ids)
    stack.push_async_callback(graph.close)
    try:
        await graph.start()
    except GraphUnavailable as exc:
        raise StartupError("NEO4J_URI", str(exc), "start that Neo4j, or unset NEO4J_URI to keep graphs in SQL") from exc
    log.info("graph=neo4j uri=%s database=%s", config.uri, config.database)
    return graph


@asynccontextmanager
async def build_services(settings: Settings, *, serving: bool = False) -> AsyncIterator[Services]:
    """Start every part; on any failure, stop what was started and raise StartupError.

    Remote parts are reached before anything is written locally, so a wrong URL leaves no files.
    """
    check_settings(settings, serving=serving)
    async with AsyncExitStack() as stack:
        store: WeaviateStore | None = None
        db: Database | None = None
        if settings.WEAVIATE_URL:
            store = await _connect_remote_index(settings, stack)
        if settings.DATABASE_URL:
            db = await _open_database(settings, stack)
        try:
            embedder = build_embedder(settings.embedder())
        except EmbedderUnavailable as exc:
            raise StartupError("EMBEDDING_MODEL_DIR", str(exc), "see `ragbot doctor`") from exc
        if isinstance(embedder, OpenAIEmbedder):
            stack.push_async_callback(embedder.close)
        server: WeaviateServer | None = None
        if store is None:
            server, store = await _start_local_index(settings, stack)
        vector_model = _vector_model(settings)
        await store.claim_vectors(vector_model)
        if db is None:
            db = await _open_database(settings, stack)
        try:
            tokens = TokenCounter(settings.TOKEN_ENCODING, settings.TIKTOKEN_CACHE_DIR)
        except (OSError, ValueError) as exc:
            raise StartupError(
                "TIKTOKEN_CACHE_DIR",
                f"cannot load {settings.TOKEN_ENCODING}: {exc}",
                "point it at tiktoken's encoding files",
            ) from exc
        metrics = ServiceMetrics()
        chat_model: OpenAIChatModel | None = None
        chat_config = settings.chat_model()
        if chat_config is not None:
            chat_model = OpenAIChatModel(chat_config, observer=metrics.model, tokens=tokens)
            stack.push_async_callback(chat_model.close)
        cache = SqlEmbeddingCache(db)
        if store.claimed_unrecorded:
            # The cache filed an older ragbot's vectors under the model's name; they are the index's, so this model's.
            await cache.adopt(embedder.provider, embedder.model_id, vector_model)
        cached = CachedEmbedder(embedder, cache, cache_model=vector_model)
        lexical = LexicalAnalyzer(settings.JIEBA_USER_DICT)
        reranker = build_reranker(settings.reranker(), cached, lexical)
        if isinstance(reranker, ApiReranker):
            stack.push_async_callback(reranker.close)
        neo4j = await _open_neo4j(settings, db, stack)
        graph: GraphStore = neo4j or GraphRepo(db)
        graph_indexer = GraphIndexer(graph, _graph_extraction(settings, chat_model))
        documents, faqs, job_repo = DocumentRepo(db, graph=neo4j), FaqRepo(db), JobRepo(db)
        knowledge_bases = KnowledgeBaseRepo(db, graph=neo4j)
        index_lock = IndexLock(LeaseRepo(db), runner_id())
        schedules = ScheduleRepo(db)
        tables = TableStore(settings.tables(), db)
        knowledge = KnowledgeBases(knowledge_bases, documents, store, index_lock, schedules, tables)
        sandbox = ExtractionSandbox(settings.extract_sandbox())
        stack.push_async_callback(sandbox.close)
        ingestor = DocumentIngestor(
            documents,
            store,
            cached,
            lexical,
            tokens.encoding,
            settings.extract_limits(),
            sandbox=sandbox,
            tables=tables,
            graph=graph_indexer,
        )
        faq_importer = FaqImporter(faqs, store, cached, lexical)
        work = IngestionWork(knowledge_bases, ingestor, faq_importer, settings.ingestion_limits(), schedules)
        await knowledge.repair_index()
        web_leg = None
        if settings.WEB_SEARCH_PROVIDER:
            session = web_session()
            stack.push_async_callback(session.close)
            web_leg = build_web_leg(settings, session, cached.transient, lexical)
        if server is not None:
            server.supervise(_after_restart(store, knowledge))
            stack.push_async_callback(server.stop_supervising)
        model_slots = asyncio.Semaphore(settings.CHAT_MAX_CONCURRENT_MODEL_CALLS)
        media = open_media_reader(settings, stack, model_slots)
        services = Services(
            settings=settings,
            media=media,
            model_slots=model_slots,
            db=db,
            store=store,
            weaviate_server=server,
            embedder=cached,
            chat_model=chat_model,
            reranker=reranker,
            metrics=metrics,
            tokens=tokens,
            lexical=lexical,
            documents=documents,
            faqs=faqs,
            job_repo=job_repo,
            conversations=ConversationRepo(db),
            knowledge=knowledge,
            ingestor=ingestor,
            faq_importer=faq_importer,
            jobs=JobRunner(
                job_repo,
                work,
                concurrency=settings.INGEST_CONCURRENCY,
                batch=work.run_batch,
                before_start=index_lock.wait_writable,
                uploads=UploadFolder(settings.data_dir / "uploads"),
                observer=metrics.jobs,
            ),
            bindings=BindingRepo(db),
            index_lock=index_lock,
            schedules=schedules,
            tables=tables,
            knowledge_bases=knowledge_bases,
            graph=graph,
            graph_switches=GraphSwitches(graph),
            graph_indexer=graph_indexer,
            vector_model=vector_model,
            web_leg=web_leg,
        )
        services.answerer = Answerer(pipeline_parts(services))
        if store.missing_properties() or store.stale_terms():
            # Serving goes on: searches fall back to SQL for what the old index lacks, old BM25 terms still match
            # the words an older analyzer cut alike.
            log.warning("index=outdated note=%r", index_outdated(store.missing_properties(), store.stale_terms()))
        yield services
