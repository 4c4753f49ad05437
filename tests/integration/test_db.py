"""The relational store contract, run on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import UTC
from pathlib import Path

import numpy as np
import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlalchemy.exc import IntegrityError
from sqlmodel import SQLModel, select

import storage
from storage.db import Database, DatabaseConfig, head_revision
from storage.embedding_cache import SqlEmbeddingCache
from storage.models import KnowledgeBase
from tests.conftest import fresh_postgres_database

EXPECTED_TABLES = {
    "graph_switch",
    "graph_node",
    "graph_edge",
    "graph_mention",
    "knowledge_base",
    "knowledge_base_grant",
    "knowledge_base_tables",
    "document",
    "document_sheet",
    "segment",
    "chunk",
    "faq",
    "conversation",
    "message",
    "posted_message",
    "ingestion_job",
    "index_write",
    "lease",
    "channel_binding",
    "chat_setting",
    "embedding_cache",
    "slack_installation",
    "slack_oauth_state",
    "command_event",
    "config_epoch",
    "shared_key",
    "schedule",
    "schedule_tick",
    "feedback_tally",
    "alembic_version",
}


async def test_open_creates_every_table(db: Database) -> None:
    async with db.engine.connect() as connection:
        tables = await connection.run_sync(lambda sync: set(inspect(sync).get_table_names()))
    assert tables == EXPECTED_TABLES


async def test_migrations_match_the_models(db: Database) -> None:
    async with db.engine.connect() as connection:
        diff = await connection.run_sync(
            lambda sync: compare_metadata(MigrationContext.configure(sync), SQLModel.metadata)
        )
    assert diff == []


def test_the_head_revision_read_without_alembic_is_alembics_own() -> None:
    config = Config()
    config.set_main_option("script_location", str(Path(storage.__file__).parent / "migrations"))
    assert head_revision() == ScriptDirectory.from_config(config).get_current_head()


async def test_reopening_a_migrated_database_keeps_its_rows(db: Database) -> None:
    async with db.session() as session:
        session.add(KnowledgeBase(name="handbook", chunking={"mode": "general"}))
    await db.close()
    await db.open()
    async with db.session() as session:
        rows = (await session.exec(select(KnowledgeBase))).all()
    assert [(row.name, row.chunking) for row in rows] == [("handbook", {"mode": "general"})]
    assert rows[0].created_at.tzinfo is not None
    assert rows[0].created_at.utcoffset() == UTC.utcoffset(None)


async def test_knowledge_base_names_are_unique(db: Database) -> None:
    async with db.session() as session:
        session.add(KnowledgeBase(name="dup"))
    with pytest.raises(IntegrityError):
        async with db.session() as session:
            session.add(KnowledgeBase(name="dup"))


async def test_two_owners_may_each_have_a_knowledge_base_of_one_name(db: Database) -> None:
    async with db.session() as session:
        session.add(KnowledgeBase(name="handbook"))
        session.add(KnowledgeBase(name="handbook", owner="slack:T1"))
        session.add(KnowledgeBase(name="handbook", owner="slack:T2"))
    async with db.session() as session:
        owners = sorted(row.owner for row in (await session.exec(select(KnowledgeBase))).all())
    assert owners == ["", "slack:T1", "slack:T2"]


async def test_embedding_cache_round_trips_float32_vectors(db: Database) -> None:
    cache = SqlEmbeddingCache(db)
    vector = [0.1, -0.25, 3.5]
    await cache.put_many("local", "m", {"h1": vector})
    found = await cache.get_many("local", "m", ["h1", "h2"])
    assert list(found) == ["h1"]
    np.testing.assert_allclose(found["h1"], vector, rtol=1e-6)


async def test_embedding_cache_is_keyed_by_provider_and_model(db: Database) -> None:
    cache = SqlEmbeddingCache(db)
    await cache.put_many("local", "m1", {"h": [1.0]})
    assert await cache.get_many("local", "m2", ["h"]) == {}
    assert await cache.get_many("openai", "m1", ["h"]) == {}


async def test_embedding_cache_keeps_the_first_vector_on_conflict(db: Database) -> None:
    cache = SqlEmbeddingCache(db)
    await cache.put_many("local", "m", {"h": [1.0, 2.0]})
    await cache.put_many("local", "m", {"h": [9.0, 9.0], "other": [3.0, 4.0]})
    found = await cache.get_many("local", "m", ["h", "other"])
    assert found == {"h": [1.0, 2.0], "other": [3.0, 4.0]}


async def test_embedding_cache_handles_lookups_past_the_parameter_limit(db: Database) -> None:
    cache = SqlEmbeddingCache(db)
    vectors = {f"h{i}": [float(i)] for i in range(1200)}
    await cache.put_many("local", "m", vectors)
    found = await cache.get_many("local", "m", list(vectors))
    assert found == vectors


async def test_an_older_ragbots_cached_vectors_are_adopted_under_the_models_exact_name(db: Database) -> None:
    cache = SqlEmbeddingCache(db)
    await cache.put_many("local", "minilm", {"h1": [1.0, 0.0], "h2": [0.0, 1.0]})
    await cache.put_many("local", "minilm@abcd1234", {"h2": [0.5, 0.5]})
    await cache.put_many("openai", "minilm", {"h1": [9.0, 9.0]})
    assert await cache.adopt("local", "minilm", "minilm@abcd1234") == 1
    adopted = await cache.get_many("local", "minilm@abcd1234", ["h1", "h2"])
    # What was already filed under the exact name stays; another provider's vectors are not touched.
    assert adopted == {"h1": [1.0, 0.0], "h2": [0.5, 0.5]}
    assert await cache.get_many("local", "minilm", ["h1"]) == {}
    assert await cache.get_many("openai", "minilm", ["h1"]) == {"h1": [9.0, 9.0]}


async def test_a_tenant_knows_a_name_as_its_own_before_a_granted_one_and_never_another_tenants(db: Database) -> None:
    from storage.repos.knowledge_bases import KnowledgeBaseRepo

    repo = KnowledgeBaseRepo(db)
    operators = await repo.create("handbook", chunking={})
    theirs = await repo.create("secrets", chunking={}, owner="slack:T2")
    assert await repo.visible_named("slack:T1", "handbook") is None
    assert await repo.grant(operators.id, "slack:T1")
    granted = await repo.visible_named("slack:T1", "handbook")
    assert granted is not None
    assert granted.id == operators.id
    own = await repo.create("handbook", chunking={}, owner="slack:T1")
    found = await repo.visible_named("slack:T1", "handbook")
    assert found is not None
    assert found.id == own.id
    assert await repo.visible_named("slack:T1", "secrets") is None
    assert await repo.visible_named("slack:T2", "secrets") == theirs


async def test_instances_opening_a_fresh_postgresql_database_together_migrate_it_once(postgres_url: str) -> None:
    url = await fresh_postgres_database(postgres_url)
    databases = [Database(DatabaseConfig(url=url)) for _ in range(4)]
    try:
        await asyncio.gather(*(database.open() for database in databases))
        async with databases[0].engine.connect() as connection:
            tables = await connection.run_sync(lambda sync: set(inspect(sync).get_table_names()))
    finally:
        for database in databases:
            await database.close()
    assert tables == EXPECTED_TABLES
