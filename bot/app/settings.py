"""Settings: the only reader of the environment and `.env`."""

from __future__ import annotations

import dataclasses
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Self

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from bot.chat.media import MediaLimits
from bot.knowledge.ingestion import IngestionLimits
from bot.knowledge.retention import RetentionPolicy
from bot.settings_base import Network, PlatformSettings, is_loopback, names, networks
from rag.config import AnswerConfig, ChatModelConfig, EmbedderConfig
from rag.extractive import ExtractiveConfig
from rag.faq.search import FaqSearchConfig
from rag.fusion import THRESHOLD_FLOOR
from rag.history import HistoryConfig
from rag.ingest.addresses import AddressPolicy
from rag.ingest.extract import ExtractLimits
from rag.ingest.extractors.limits import OcrLimits
from rag.ingest.fetch import FetchLimits
from rag.ingest.sandbox import SandboxLimits
from rag.language import LANGUAGES, Language
from rag.models.rerankers import LOCAL_DECLINE_FLOOR, RerankerConfig
from rag.relevance import RerankConfig
from rag.retrieval import FusionWeights, RetrievalConfig
from rag.stages.search import SearchConfig
from rag.web.blacklist import Blacklist, BlacklistError
from rag.web.duckduckgo import HTML_URL as DUCKDUCKGO_HTML_URL
from rag.web.duckduckgo import INSTANT_ANSWER_URL as DUCKDUCKGO_API_URL
from rag.web.google import API_URL as GOOGLE_API_URL
from storage.db import DatabaseConfig
from storage.graph.config import Neo4jConfig
from storage.secret_box import KEY_FILE
from storage.tables.records import TableConfig
from storage.weaviate.config import WeaviateConfig, WeaviateServerConfig

_SUPPORTED_DB_SCHEMES = ("sqlite", "postgresql", "postgres")
# The share of INGEST_EXTRACT_SECONDS a file's OCR may take: the pages it read still come back in time.
_OCR_SHARE = 0.75


# FUSION_WEIGHTS: {"chunks"|"faqs": {language: {"vector"|"bm25": weight}}}
_WeightTable = dict[Literal["chunks", "faqs"], dict[Language, dict[Literal["vector", "bm25"], float]]]


class CoreSettings(BaseSettings):
    """The settings of ragbot itself; field names are the environment variable names."""

    # env_ignore_empty: `NAME=` (as .env.example writes every unset option) means "use the default";
    # without it `EMBEDDING_DIMENSION=` fails to parse and `EMBEDDING_MODEL_DIR=` becomes Path(".").
    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="forbid", case_sensitive=True, env_ignore_empty=True
    )

    RAGBOT_DATA_DIR: Path = Path("data")
    # The key ring that seals secrets kept in the database (Slack tokens). Unset: secrets.key in the data dir.
    # Instances on one database need the same file (mount or copy it): one cannot open what another sealed.
    RAGBOT_SECRETS_KEY_FILE: Path | None = None
    RAGBOT_HOST: str = "127.0.0.1"
    RAGBOT_PORT: int = Field(default=8080, ge=1, le=65535)
    LOG_LEVEL: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # `json`: one JSON object per line (time, level, logger, turn, job, message), for a log collector.
    LOG_FORMAT: Literal["text", "json"] = "text"

    DATABASE_URL: str | None = None
    DATABASE_POOL_SIZE: int | None = Field(default=None, ge=1, le=1000)
    # The DuckDB file that keeps CSV and spreadsheet rows as tables (data analysis). Unset: tables.duckdb in the
    # data dir. One process writes it at a time: instances on one database each keep their own.
    TABLES_PATH: Path | None = None
    # Rows of a query's result shown under an answer and given to the model, and the seconds a query may run.
    TABLES_MAX_ROWS: int = Field(default=50, ge=1, le=1000)
    TABLES_QUERY_TIMEOUT: float = Field(default=5.0, gt=0, le=60)

    # One Weaviate, or the nodes of one cluster, comma-separated: ragbot uses the first that answers and moves on
    # to the next when its node stops answering. WEAVIATE_GRPC_URL then names each node's gRPC, in the same order.
    WEAVIATE_URL: str | None = None
    WEAVIATE_GRPC_URL: str | None = None
    WEAVIATE_API_KEY: SecretStr | None = None
    WEAVIATE_BINARY: Path = Path("bin/weaviate-server")
    WEAVIATE_STARTUP_TIMEOUT: float = Field(default=60.0, gt=0)
    WEAVIATE_QUERY_TIMEOUT: float = Field(default=30.0, gt=0)
    WEAVIATE_MAX_CONCURRENT_QUERIES: int = Field(default=16, ge=1, le=10_000)
    WEAVIATE_REPLICATION_FACTOR: int = Field(default=1, ge=1, le=100)
    WEAVIATE_CONSISTENCY: Literal["ONE", "QUORUM", "ALL"] = "QUORUM"

    # The knowledge bases' entity graphs (/graph on) in a Neo4j (bolt:// or neo4j://, +s for TLS); unset, they are
    # tables in the relational store. Which bases' graphs are on stays in the relational store either way.
    NEO4J_URI: str | None = None
    NEO4J_USER: str | None = None
    NEO4J_PASSWORD: SecretStr | None = None
    NEO4J_DATABASE: str = "neo4j"

    EMBEDDING_PROVIDER: Literal["local", "openai"] = "local"
    EMBEDDING_MODEL: str = "sentence-transformers/all-MiniLM-L6-v2"
    EMBEDDING_MODEL_DIR: Path | None = None
    EMBEDDING_MAX_TOKENS: int = Field(default=256, ge=8, le=8192)
    EMBEDDING_BATCH_SIZE: int = Field(default=64, ge=1, le=2048)
    EMBEDDING_BASE_URL: str | None = None
    EMBEDDING_API_KEY: SecretStr | None = None
    EMBEDDING_DIMENSION: int | None = Field(default=None, ge=1)
    # The languages the embedding model serves ("en", "zh", "en,zh" or "*"): its vectors count there (fusion, the
    # local reranker, FAQ confidence); elsewhere words alone carry retrieval. Unset: en for the default model,
    # * for an OpenAI-compatible API (its embedding models are multilingual as a rule).
    EMBEDDING_LANGUAGES: str | None = None
    # RRF weights per language and leg, as bench/fusion_weights.py prints them for your own model; unset, the
    # DEV sweep of the default English model serves every language in EMBEDDING_LANGUAGES.
    FUSION_WEIGHTS: _WeightTable | None = None

    CHAT_MODEL: str | None = None
    CHAT_MODEL_BASE_URL: str | None = None
    CHAT_MODEL_API_KEY: SecretStr | None = None
    CHAT_MODEL_TIMEOUT: float = Field(default=60.0, gt=0)
    CHAT_MODEL_MAX_RETRIES: int = Field(default=2, ge=0, le=10)
    # Photos and voice messages sent as questions. A vision model (OpenAI-compatible chat with image input)
    # describes images instead of OCR; a speech model (/audio/transcriptions) transcribes voice messages. Their
    # base URL and key default to the chat model's.
    VISION_MODEL: str | None = None
    VISION_MODEL_BASE_URL: str | None = None
    VISION_MODEL_API_KEY: SecretStr | None = None
    TRANSCRIPTION_MODEL: str | None = None
    TRANSCRIPTION_BASE_URL: str | None = None
    TRANSCRIPTION_API_KEY: SecretStr | None = None
    MEDIA_MAX_IMAGE_MB: float = Field(default=20.0, gt=0, le=1024)
    # OpenAI's transcription endpoint takes at most 25 MB.
    MEDIA_MAX_AUDIO_MB: float = Field(default=25.0, gt=0, le=1024)
    MEDIA_MAX_AUDIO_SECONDS: float = Field(default=600.0, gt=0, le=86_400)
    MEDIA_TIMEOUT: float = Field(default=60.0, gt=0, le=3600)

    TIKTOKEN_CACHE_DIR: Path | None = None
    TOKEN_ENCODING: Literal["cl100k_base", "o200k_base"] = "cl100k_base"

    INGEST_CONCURRENCY: int = Field(default=2, ge=1, le=32)
    INGEST_MAX_FILE_MB: float = Field(default=50.0, gt=0, le=2048)
    INGEST_EXTRACT_MEMORY_MB: int = Field(default=1024, ge=256, le=1_048_576)
    INGEST_EXTRACT_SECONDS: float = Field(default=120.0, gt=0, le=86_400)
    INGEST_MAX_TEXT_CHARS: int = Field(default=20_000_000, ge=1000, le=2_000_000_000)
    OCR_COMMAND: str = "tesseract"
    OCR_LANGUAGES: str = Field(default="eng+chi_sim", pattern=r"^[A-Za-z_]+(\+[A-Za-z_]+)*$")
    OCR_MAX_MEGAPIXELS: float = Field(default=12.0, gt=0.1, le=100)
    OCR_MAX_PAGES: int = Field(default=100, ge=1, le=10_000)
    OCR_PAGE_SECONDS: float = Field(default=30.0, gt=0, le=3600)
    URL_FETCH_TIMEOUT: float = Field(default=60.0, gt=0, le=3600)
    URL_FETCH_ALLOWED_NETWORKS: str = ""
    JIEBA_USER_DICT: Path | None = None

    RETRIEVAL_TOP_K: int = Field(default=5, ge=1, le=50)
    QUERY_REWRITE: bool = True
    QUERY_EXPANSION: bool = True
    GRAPH_MODEL_ENTITIES: bool = False
    GRAPH_MODEL_EXTRACTION: bool = False
    HISTORY_MESSAGES: int = Field(default=20, ge=0, le=500)
    HISTORY_MAX_ROUNDS: int = Field(default=5, ge=0, le=100)
    FAQ_PRIORITY: bool = True
    FAQ_DIRECT_ANSWER_THRESHOLD: float = Field(default=0.9, ge=0.0, le=1.0)
    FAQ_ANSWER_DIRECTLY: bool = True
    FAQ_NEGATIVE_SIMILARITY: float = Field(default=0.85, ge=0.0, le=1.0)
    RERANK_PROVIDER: Literal["local", "api", "none"] = "local"
    RERANK_BASE_URL: str | None = None
    RERANK_API_KEY: SecretStr | None = None
    RERANK_MODEL: str = "jina-reranker-v2-base-multilingual"
    RERANK_TIMEOUT: float = Field(default=10.0, gt=0, le=600)
    RERANK_THRESHOLD: float = Field(default=0.5, ge=0.0, le=1.0)
    # Unset: the reranker's own (the local one's measured LOCAL_DECLINE_FLOOR, WeKnora's 0.3 for an API).
    RERANK_FLOOR: float | None = Field(default=None, ge=0.0, le=1.0)
    ANSWER_FALLBACK: Literal["extractive", "fixed", "model"] = "extractive"
    ANSWER_FALLBACK_TEXT: str = "I could not find an answer to that in the knowledge base."
    ANSWER_CONTEXT_TOKENS: int = Field(default=6000, ge=500, le=2_000_000)
    # Seconds an answer may take to be written in all; a model that trickles past it is cut off with a note.
    ANSWER_DEADLINE: float = Field(default=180.0, gt=0, le=3600)
    EXTRACTIVE_ANSWER_CHARS: int = Field(default=400, ge=80, le=4000)
    # Web search beside the knowledge base, in chats whose admin said `/web on`: "" (off), duckduckgo or google.
    WEB_SEARCH_PROVIDER: Literal["", "duckduckgo", "google"] = ""
    GOOGLE_SEARCH_API_KEY: SecretStr | None = None
    GOOGLE_SEARCH_ENGINE_ID: str = ""
    # URLs web search never shows or reads: one rule a line, `/regex/` or a wildcard over the whole URL.
    WEB_SEARCH_BLACKLIST: str = ""
    WEB_SEARCH_TIMEOUT: float = Field(default=5.0, gt=0, le=60)
    WEB_SEARCH_MAX_RESULTS: int = Field(default=10, ge=1, le=50)
    WEB_SEARCH_REFERENCES: int = Field(default=5, ge=1, le=20)
    WEB_SEARCH_FETCH_PAGES: int = Field(default=3, ge=0, le=10)
    WEB_SEARCH_PAGE_TIMEOUT: float = Field(default=4.0, gt=0, le=60)
    WEB_SEARCH_PAGE_MAX_KB: int = Field(default=1000, ge=10, le=50_000)
    # The providers' addresses (tests point them at a local fake).
    WEB_SEARCH_DUCKDUCKGO_URL: str = DUCKDUCKGO_HTML_URL
    WEB_SEARCH_DUCKDUCKGO_API_URL: str = DUCKDUCKGO_API_URL
    WEB_SEARCH_GOOGLE_URL: str = GOOGLE_API_URL

    DEFAULT_KNOWLEDGE_BASES: str = ""
    CHAT_ANSWER_MODE: Literal["mention", "all"] = "mention"
    CHAT_RATE_LIMIT: int = Field(default=20, ge=1, le=10_000)
    CHAT_MAX_CONCURRENT_TURNS: int = Field(default=64, ge=1, le=10_000)
    CHAT_MAX_CONCURRENT_MODEL_CALLS: int = Field(default=16, ge=1, le=10_000)
    # Seconds a ragbot process's leases last unless renewed (its presence, a conversation's turn): within this
    # long of one process dying, another finishes its answers and takes its conversations.
    INSTANCE_LEASE: float = Field(default=15.0, ge=3.0, le=600.0)
    # An answer whose process died longer ago than this is closed rather than written again (seconds).
    TURN_RESUME_MAX_AGE: float = Field(default=600.0, ge=0.0, le=86_400.0)
    # On SIGTERM: seconds the answers being written get to finish before they are cut off with a note.
    SHUTDOWN_GRACE: float = Field(default=25.0, ge=0.0, le=600.0)
    # Conversations with no message for this many days are removed by the retention sweep (their daily question
    # and feedback counts stay for `ragbot stats`); 0 keeps them for ever.
    RETENTION_DAYS: int = Field(default=0, ge=0, le=36_500)
    # How often the retention sweep runs (a number and a unit: 30m, 6h, 1d).
    RETENTION_EVERY: str = "6h"
    # The embedding cache keeps at most this many vectors, and none older than EMBEDDING_CACHE_MAX_DAYS (0: any age).
    EMBEDDING_CACHE_MAX_ENTRIES: int = Field(default=2_000_000, ge=1000)
    EMBEDDING_CACHE_MAX_DAYS: int = Field(default=0, ge=0, le=36_500)
    RAGBOT_INTERNAL_PORT: int | None = Field(default=None, ge=1, le=65535)
    # Reachable from the internet (behind a reverse proxy): the web chat needs its access token, /metrics and
    # the detailed /healthz move to the internal listener. A webhook adapter or a non-loopback host means it too.
    RAGBOT_PUBLIC: bool = False
    # The proxies (IPs or CIDR networks, comma-separated) whose X-Forwarded-For/-Proto/-Host are believed.
    RAGBOT_TRUSTED_PROXIES: str = ""

    @field_validator("DATABASE_URL")
    @classmethod
    def _database_url_is_supported(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        try:
            url = make_url(value)
        except ArgumentError as exc:
            raise ValueError("not a database URL (expected postgresql://user:pass@host/db)") from exc
        backend = url.get_backend_name()
        if backend not in _SUPPORTED_DB_SCHEMES:
            raise ValueError(f"unsupported database {backend!r}: use postgresql:// or sqlite://")
        if backend != "sqlite" and not url.database:
            raise ValueError("names no database (expected postgresql://user:pass@host/db)")
        return value

    @field_validator(
        "EMBEDDING_BASE_URL",
        "CHAT_MODEL_BASE_URL",
        "RERANK_BASE_URL",
        "VISION_MODEL_BASE_URL",
        "TRANSCRIPTION_BASE_URL",
    )
    @classmethod
    def _url_has_scheme(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @field_validator("NEO4J_URI")
    @classmethod
    def _neo4j_uri_has_scheme(cls, value: str | None) -> str | None:
        if value is None or value.strip() == "":
            return None
        # The official driver's schemes: direct (bolt) or routed (neo4j); plain, TLS (+s) or TLS self-signed (+ssc).
        if not value.startswith(tuple(f"{base}{tls}://" for base in ("bolt", "neo4j") for tls in ("", "+s", "+ssc"))):
            raise ValueError("must start with bolt://, neo4j:// (or their +s / +ssc TLS forms)")
        return value.strip()

    @field_validator("WEAVIATE_URL", "WEAVIATE_GRPC_URL")
    @classmethod
    def _node_urls_have_scheme(cls, value: str | None) -> str | None:
        if value is None or value.strip(" ,") == "":
            return None
        urls = [url.strip() for url in value.split(",") if url.strip()]
        if not all(url.startswith(("http://", "https://")) for url in urls):
            raise ValueError("each URL (comma-separated) must start with http:// or https://")
        return ",".join(url.rstrip("/") for url in urls)

    @model_validator(mode="after")
    def _grpc_urls_match_nodes(self) -> Self:
        if self.WEAVIATE_URL and self.WEAVIATE_GRPC_URL:
            nodes, grpcs = self.WEAVIATE_URL.count(",") + 1, self.WEAVIATE_GRPC_URL.count(",") + 1
            if nodes != grpcs:
                raise ValueError(
                    f"WEAVIATE_GRPC_URL names {grpcs} node(s) but WEAVIATE_URL names {nodes}: "
                    "give one gRPC URL per node, in the same order"
                )
        return self

    @field_validator("EMBEDDING_LANGUAGES")
    @classmethod
    def _known_languages(cls, value: str | None) -> str | None:
        if value is None or value.strip() == "*":
            return value
        unknown = {part.strip() for part in value.split(",")} - set(LANGUAGES)
        if unknown:
            raise ValueError(f"unknown language {', '.join(sorted(unknown))}: use {', '.join(LANGUAGES)} or *")
        return value

    @field_validator("FUSION_WEIGHTS")
    @classmethod
    def _weights_not_negative(cls, value: _WeightTable | None) -> _WeightTable | None:
        weights = [w for by_lang in (value or {}).values() for legs in by_lang.values() for w in legs.values()]
        if any(weight < 0 for weight in weights):
            raise ValueError("fusion weights are RRF weights: 0 or more (0 turns a leg off)")
        return value

    @field_validator("ANSWER_FALLBACK_TEXT")
    @classmethod
    def _fallback_text_is_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty: it is what users read when nothing matches")
        return value.strip()

    @field_validator("WEB_SEARCH_BLACKLIST")
    @classmethod
    def _blacklist_parses(cls, value: str) -> str:
        try:
            Blacklist.parse(value)
        except BlacklistError as exc:
            raise ValueError(f"{exc}; a rule is /regex/ or a wildcard pattern such as *://*.example.com/*") from exc
        return value

    @field_validator("WEB_SEARCH_DUCKDUCKGO_URL", "WEB_SEARCH_DUCKDUCKGO_API_URL", "WEB_SEARCH_GOOGLE_URL")
    @classmethod
    def _provider_url_has_scheme(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

    @model_validator(mode="after")
    def _google_has_its_keys(self) -> Self:
        if self.WEB_SEARCH_PROVIDER == "google" and not (self.GOOGLE_SEARCH_API_KEY and self.GOOGLE_SEARCH_ENGINE_ID):
            raise ValueError(
                "WEB_SEARCH_PROVIDER=google needs GOOGLE_SEARCH_API_KEY and GOOGLE_SEARCH_ENGINE_ID "
                "(a Programmable Search Engine's API key and its id, cx)"
            )
        return self

    @field_validator("URL_FETCH_ALLOWED_NETWORKS")
    @classmethod
    def _networks_parse(cls, value: str) -> str:
        try:
            AddressPolicy.allowing(*value.split(","))
        except ValueError as exc:
            raise ValueError(f"{exc}: give comma-separated CIDR networks such as 10.0.0.0/8,192.168.0.0/16") from exc
        return value

    @field_validator("RAGBOT_TRUSTED_PROXIES")
    @classmethod
    def _proxies_parse(cls, value: str) -> str:
        try:
            networks(value)
        except ValueError as exc:
            raise ValueError(f"{exc}: give comma-separated addresses or networks such as 127.0.0.1,10.0.0.0/8") from exc
        return value

    @property
    def data_dir(self) -> Path:
        """The data directory as an absolute path."""
        return self.RAGBOT_DATA_DIR.expanduser().resolve()

    def secrets_key_file(self) -> Path:
        """Where the key ring that seals the database's secrets is kept."""
        if self.RAGBOT_SECRETS_KEY_FILE is not None:
            return self.RAGBOT_SECRETS_KEY_FILE.expanduser().resolve()
        return self.data_dir / KEY_FILE

    def database(self) -> DatabaseConfig:
        """Relational store: PostgreSQL when DATABASE_URL is set, else SQLite in the data dir."""
        url = self.DATABASE_URL or f"sqlite:///{self.data_dir / 'ragbot.sqlite3'}"
        return DatabaseConfig(url=url, pool_size=self.database_pool_size())

    def tables(self) -> TableConfig:
        """Where tabular documents' rows are kept as tables and how far a query over them may go."""
        path = self.TABLES_PATH.expanduser().resolve() if self.TABLES_PATH else self.data_dir / "tables.duckdb"
        return TableConfig(path=path, max_rows=self.TABLES_MAX_ROWS, timeout=self.TABLES_QUERY_TIMEOUT)

    def database_pool_size(self) -> int:
        """DATABASE_POOL_SIZE, else sized from the turns at once: a turn holds a connection only for its three short
        statements, so a quarter of them (at least 10, at most 40) plus 8 for jobs and commands serve a full burst,
        and several instances stay under PostgreSQL's default 100 connections."""
        if self.DATABASE_POOL_SIZE is not None:
            return self.DATABASE_POOL_SIZE
        return min(max(self.CHAT_MAX_CONCURRENT_TURNS // 4, 10), 40) + 8

    def weaviate(self) -> WeaviateConfig:
        """Vector index connection; `url=None` means ragbot runs the local server itself."""
        return WeaviateConfig(
            url=self.WEAVIATE_URL,
            grpc_url=self.WEAVIATE_GRPC_URL,
            api_key=self.WEAVIATE_API_KEY.get_secret_value() if self.WEAVIATE_API_KEY else None,
            query_timeout=self.WEAVIATE_QUERY_TIMEOUT,
            max_concurrent_queries=self.WEAVIATE_MAX_CONCURRENT_QUERIES,
            replication_factor=self.WEAVIATE_REPLICATION_FACTOR,
            consistency=self.WEAVIATE_CONSISTENCY,
        )

    def weaviate_server(self) -> WeaviateServerConfig:
        """How to run the local Weaviate server when WEAVIATE_URL is unset."""
        return WeaviateServerConfig(
            binary=self.WEAVIATE_BINARY.expanduser(),
            data_dir=self.data_dir / "weaviate",
            startup_timeout=self.WEAVIATE_STARTUP_TIMEOUT,
        )

    def neo4j(self) -> Neo4jConfig | None:
        """The Neo4j holding the entity graphs, or None to keep them in the relational store."""
        if not self.NEO4J_URI:
            return None
        return Neo4jConfig(
            uri=self.NEO4J_URI,
            user=self.NEO4J_USER or None,
            password=self.NEO4J_PASSWORD.get_secret_value() if self.NEO4J_PASSWORD else None,
            database=self.NEO4J_DATABASE,
        )

    def embedder(self) -> EmbedderConfig:
        """Which embedder to build and how."""
        return EmbedderConfig(
            provider=self.EMBEDDING_PROVIDER,
            model=self.EMBEDDING_MODEL,
            model_dir=self.EMBEDDING_MODEL_DIR.expanduser() if self.EMBEDDING_MODEL_DIR else None,
            cache_dir=self.data_dir / "models",
            max_tokens=self.EMBEDDING_MAX_TOKENS,
            batch_size=self.EMBEDDING_BATCH_SIZE,
            base_url=self.EMBEDDING_BASE_URL,
            api_key=self.EMBEDDING_API_KEY.get_secret_value() if self.EMBEDDING_API_KEY else None,
            dimension=self.EMBEDDING_DIMENSION,
        )

    def retention_policy(self) -> RetentionPolicy:
        """How long conversations and cached embeddings are kept."""
        return RetentionPolicy(self.RETENTION_DAYS, self.EMBEDDING_CACHE_MAX_DAYS, self.EMBEDDING_CACHE_MAX_ENTRIES)

    def ingestion_limits(self) -> IngestionLimits:
        """Size, time and address limits for files and URLs."""
        max_bytes = int(self.INGEST_MAX_FILE_MB * 1_000_000)
        return IngestionLimits(
            max_file_bytes=max_bytes,
            fetch=FetchLimits(max_bytes=max_bytes, total_timeout=self.URL_FETCH_TIMEOUT),
            address_policy=AddressPolicy.allowing(*self.URL_FETCH_ALLOWED_NETWORKS.split(",")),
        )

    def extract_sandbox(self) -> SandboxLimits:
        """What reading one file may cost: its child process's memory, its seconds, its characters of text."""
        return SandboxLimits(
            memory_bytes=self.INGEST_EXTRACT_MEMORY_MB * 1024 * 1024,
            seconds=self.INGEST_EXTRACT_SECONDS,
            max_chars=self.INGEST_MAX_TEXT_CHARS,
            idle=self.INGEST_CONCURRENCY,
        )

    def extract_limits(self) -> ExtractLimits:
        """Limits extraction applies to one file (and what a zip container may unpack to)."""
        # OCR stops in time for the rest of the file to reach the index before INGEST_EXTRACT_SECONDS end it.
        ocr = dataclasses.replace(self.ocr_limits(), total_seconds=self.INGEST_EXTRACT_SECONDS * _OCR_SHARE)
        return ExtractLimits(max_bytes=int(self.INGEST_MAX_FILE_MB * 1_000_000), ocr=ocr)

    def ocr_limits(self) -> OcrLimits:
        """How Tesseract reads one image (a photo sent with a question: one page's time in all)."""
        return OcrLimits(
            command=self.OCR_COMMAND,
            languages=self.OCR_LANGUAGES,
            max_pixels=int(self.OCR_MAX_MEGAPIXELS * 1_000_000),
            max_pages=self.OCR_MAX_PAGES,
            page_seconds=self.OCR_PAGE_SECONDS,
            total_seconds=self.OCR_PAGE_SECONDS,
        )

    def chat_model(self) -> ChatModelConfig | None:
        """The chat model, or None when none is configured (answers are then extractive)."""
        if not self.CHAT_MODEL:
            return None
        return ChatModelConfig(
            model=self.CHAT_MODEL,
            base_url=self.CHAT_MODEL_BASE_URL,
            api_key=self.CHAT_MODEL_API_KEY.get_secret_value() if self.CHAT_MODEL_API_KEY else None,
            timeout=self.CHAT_MODEL_TIMEOUT,
            max_retries=self.CHAT_MODEL_MAX_RETRIES,
        )

    def vision_model(self) -> ChatModelConfig | None:
        """The vision model that describes images sent with questions, or None (OCR reads them)."""
        return self._media_model(self.VISION_MODEL, self.VISION_MODEL_BASE_URL, self.VISION_MODEL_API_KEY)

    def transcription_model(self) -> ChatModelConfig | None:
        """The speech model that transcribes voice messages, or None (they get a one-line reply)."""
        return self._media_model(self.TRANSCRIPTION_MODEL, self.TRANSCRIPTION_BASE_URL, self.TRANSCRIPTION_API_KEY)

    def _media_model(self, model: str | None, base_url: str | None, key: SecretStr | None) -> ChatModelConfig | None:
        if not model:
            return None
        api_key = key or self.CHAT_MODEL_API_KEY
        return ChatModelConfig(
            model=model,
            base_url=base_url or self.CHAT_MODEL_BASE_URL,
            api_key=api_key.get_secret_value() if api_key else None,
            timeout=self.MEDIA_TIMEOUT,
            max_retries=self.CHAT_MODEL_MAX_RETRIES,
        )

    def media_limits(self) -> MediaLimits:
        """How much of a question's photos and voice messages is read."""
        return MediaLimits(
            image_bytes=int(self.MEDIA_MAX_IMAGE_MB * 1_000_000),
            audio_bytes=int(self.MEDIA_MAX_AUDIO_MB * 1_000_000),
            audio_seconds=self.MEDIA_MAX_AUDIO_SECONDS,
            seconds=self.MEDIA_TIMEOUT,
        )

    def embedding_languages(self) -> frozenset[Language]:
        """The languages whose vectors retrieval trusts (EMBEDDING_LANGUAGES, or the model's default)."""
        value = self.EMBEDDING_LANGUAGES
        if value is None:
            value = "en" if self.EMBEDDING_PROVIDER == "local" else "*"
        if value.strip() == "*":
            return frozenset(LANGUAGES)
        return frozenset(lang for lang in LANGUAGES if lang in {part.strip() for part in value.split(",")})

    def fusion_weights(self) -> FusionWeights:
        """FUSION_WEIGHTS where given, over the weights for the languages the embedding model serves."""
        weights = FusionWeights.for_languages(self.embedding_languages())
        if not self.FUSION_WEIGHTS:
            return weights
        given = {
            part: {lang: {str(leg): weight for leg, weight in legs.items()} for lang, legs in by_lang.items()}
            for part, by_lang in self.FUSION_WEIGHTS.items()
        }
        return FusionWeights(
            chunks={**weights.chunks, **given.get("chunks", {})}, faqs={**weights.faqs, **given.get("faqs", {})}
        )

    def retrieval(self) -> RetrievalConfig:
        """How many passages an answer uses, and the fusion weights of each language and leg."""
        return RetrievalConfig(top_k=self.RETRIEVAL_TOP_K, weights=self.fusion_weights())

    def search(self) -> SearchConfig:
        """The SEARCH stage: thin-result expansion and direct loading of small targeted documents."""
        return SearchConfig(top_k=self.RETRIEVAL_TOP_K, expand=self.QUERY_EXPANSION)

    def faq_search(self) -> FaqSearchConfig:
        """FAQ matching: the negative-question veto by meaning and the fusion weights of the retrieval config."""
        return FaqSearchConfig(negative_similarity=self.FAQ_NEGATIVE_SIMILARITY, weights=self.retrieval().weights.faqs)

    def reranker(self) -> RerankerConfig:
        """Which reranker scores candidates: local (in-process), a /rerank API, or none."""
        return RerankerConfig(
            provider=self.RERANK_PROVIDER,
            base_url=self.RERANK_BASE_URL,
            api_key=self.RERANK_API_KEY.get_secret_value() if self.RERANK_API_KEY else None,
            model=self.RERANK_MODEL,
            timeout=self.RERANK_TIMEOUT,
        )

    def rerank(self) -> RerankConfig:
        """The RERANK stage: threshold, and MMR keeping top_k child hits (MERGE may join them into fewer)."""
        languages: frozenset[Language] | None = None
        if self.RERANK_PROVIDER == "local":
            # The local reranker leans on the embedder: only where retrieval trusts it (its vector leg counts).
            languages = self.fusion_weights().vector_languages()
        # The local scorer judges relevance but orders worse than the fusion it is given: it keeps, it does not reorder.
        floor = self.RERANK_FLOOR
        if floor is None:
            floor = LOCAL_DECLINE_FLOOR if self.RERANK_PROVIDER == "local" else THRESHOLD_FLOOR
        # Below the floor the turn declines, so nothing below it is kept either: the threshold is never lower.
        return RerankConfig(
            threshold=max(self.RERANK_THRESHOLD, floor),
            floor=floor,
            top_k=self.RETRIEVAL_TOP_K,
            languages=languages,
            reorder=self.RERANK_PROVIDER != "local",
        )

    def history(self) -> HistoryConfig:
        """How much of a conversation LOAD_HISTORY reads and keeps."""
        return HistoryConfig(limit=self.HISTORY_MESSAGES, max_rounds=self.HISTORY_MAX_ROUNDS)

    def answer(self) -> AnswerConfig:
        """How answers are written: FAQ priority, direct answers, fallback and the prompt's token budget."""
        return AnswerConfig(
            budget=self.ANSWER_CONTEXT_TOKENS,
            faq_priority=self.FAQ_PRIORITY,
            direct_answer_threshold=self.FAQ_DIRECT_ANSWER_THRESHOLD,
            answer_faq_directly=self.FAQ_ANSWER_DIRECTLY,
            fallback=self.ANSWER_FALLBACK,
            fallback_text=self.ANSWER_FALLBACK_TEXT,
            deadline=self.ANSWER_DEADLINE,
            extractive=ExtractiveConfig(
                max_chars=self.EXTRACTIVE_ANSWER_CHARS, embed_languages=frozenset(self.embedding_languages())
            ),
        )

    def default_knowledge_bases(self) -> tuple[str, ...]:
        """DEFAULT_KNOWLEDGE_BASES as names."""
        return names(self.DEFAULT_KNOWLEDGE_BASES)

    def trusted_proxies(self) -> tuple[Network, ...]:
        """RAGBOT_TRUSTED_PROXIES as networks (none by default: the peer is the client)."""
        return networks(self.RAGBOT_TRUSTED_PROXIES)

    def internal_port(self) -> int:
        """Where /metrics and health details listen when ragbot is public: loopback, this port."""
        return self.RAGBOT_INTERNAL_PORT or (self.RAGBOT_PORT % 65535) + 1


PLATFORM_SETTINGS = "ragbot.settings"


@cache
def platform_settings() -> tuple[type[PlatformSettings], ...]:
    """Every chat platform's settings model, from the `ragbot.settings` entry points, in name order."""
    return tuple(entry.load() for entry in sorted(entry_points(group=PLATFORM_SETTINGS), key=lambda e: e.name))


def _with_platforms() -> type[CoreSettings]:
    # One class holding ragbot's fields and every platform's: the environment and .env are read once, a name no
    # part declares is still refused, and each platform reads its own through PlatformSettings.of.
    # Fields come in reverse base order: ragbot's own first, then each platform's in entry-point name order.
    bases: tuple[type, ...] = (*reversed(platform_settings()), CoreSettings)
    return type("Settings", bases, {"__doc__": "Every setting ragbot reads."})


# Type checkers see the core fields; platforms' fields are read through their own models (PlatformSettings.of).
if TYPE_CHECKING:
    Settings = CoreSettings
else:
    Settings = _with_platforms()

__all__ = ["CoreSettings", "Settings", "describe_validation_error", "is_loopback", "platform_settings"]


def describe_validation_error(error: ValidationError) -> list[str]:
    """One line per offending variable, naming it and what is wrong."""
    lines = []
    for item in error.errors():
        variable = ".".join(str(part) for part in item["loc"]) or "settings"
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "is not a ragbot setting (typo in .env?)"
        lines.append(f"{variable}: {message}")
    return lines
