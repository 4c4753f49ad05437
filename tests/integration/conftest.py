"""The per-backend `db` fixture and the session store (PostgreSQL and the Weaviate are tests/conftest.py's)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from rag.models.embedders import OnnxEmbedder
from storage.db import Database, DatabaseConfig
from storage.weaviate.config import WeaviateConfig
from storage.weaviate.server import WeaviateServer
from storage.weaviate.store import WeaviateStore
from tests.conftest import fresh_postgres_database


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
