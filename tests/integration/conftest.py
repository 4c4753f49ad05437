"""The per-backend `db` fixture and the session store (PostgreSQL and the Weaviate are tests/conftest.py's)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from bot.app.settings import Settings
from bot.knowledge.bases import KnowledgeBases
from bot.knowledge.jobs import JobRunner
from rag.models.embedders import OnnxEmbedder
from storage.db import Database, DatabaseConfig
from storage.repos.bindings import BindingRepo
from storage.repos.config_epoch import ConfigEpochRepo
from storage.repos.conversations import ConversationRepo
from storage.repos.documents import DocumentRepo
from storage.repos.faqs import FaqRepo
from storage.repos.jobs import JobRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.repos.posted import PostedRepo
from storage.repos.schedules import ScheduleRepo
from storage.weaviate.config import WeaviateConfig
from storage.weaviate.server import WeaviateServer
from storage.weaviate.store import WeaviateStore
from tests.conftest import fresh_postgres_database
from tests.support.chat_world import ChatWorld, no_work


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL for an empty database on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ragbot.sqlite3'}"
    return "postgresql-fresh"


@pytest_asyncio.fixture
async def db(database_url: str, request: pytest.FixtureRequest) -> AsyncIterator[Database]:
    """An open, migrated Database on SQLite and on PostgreSQL (the storage contract runs on both)."""
    if database_url == "postgresql-fresh":
        database_url = await fresh_postgres_database(request.getfixturevalue("postgres_url"))
    database = Database(DatabaseConfig(url=database_url))
    await database.open()
    try:
        yield database
    finally:
        await database.close()


@pytest_asyncio.fixture(scope="session")
async def store(weaviate_server: WeaviateServer) -> AsyncIterator[WeaviateStore]:
    """A connected WeaviateStore; tests isolate themselves with fresh kb ids."""
    assert weaviate_server.endpoint is not None
    connected = await WeaviateStore.connect(weaviate_server.endpoint, WeaviateConfig())
    try:
        yield connected
    finally:
        await connected.close()


@pytest.fixture(scope="session")
def embedder(model_dir: Path) -> OnnxEmbedder:
    """The real local ONNX embedder."""
    return OnnxEmbedder(model_dir, model_id="sentence-transformers/all-MiniLM-L6-v2")


@pytest.fixture
def kb_id() -> str:
    """A fresh knowledge-base id, so tests sharing the session server never see each other's objects."""
    return str(uuid.uuid4())


@pytest_asyncio.fixture
async def bare_world(db: Database, tmp_path: Path) -> ChatWorld:
    """The parts, with no knowledge base yet: a new team's first run."""
    documents, job_repo = DocumentRepo(db), JobRepo(db)
    return ChatWorld(
        settings=Settings(_env_file=None, RAGBOT_DATA_DIR=tmp_path),
        conversations=ConversationRepo(db),
        bindings=BindingRepo(db),
        knowledge=KnowledgeBases(KnowledgeBaseRepo(db), documents, None),  # type: ignore[arg-type]
        documents=documents,
        faqs=FaqRepo(db),
        job_repo=job_repo,
        jobs=JobRunner(job_repo, no_work),
        epochs=ConfigEpochRepo(db),
        schedules=ScheduleRepo(db),
        posted=PostedRepo(db),
    )


@pytest_asyncio.fixture
async def world(bare_world: ChatWorld) -> ChatWorld:
    """The parts, with a knowledge base "handbook" that chats read by default."""
    await bare_world.knowledge.create("handbook", {})
    return bare_world
