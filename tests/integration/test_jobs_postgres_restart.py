"""The job runner while PostgreSQL goes away (every connection dropped, new ones refused) and comes back."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import pytest
import pytest_asyncio
from sqlalchemy.exc import SQLAlchemyError

from bot.knowledge.jobs import JobRunner
from rag.ports import Progress
from storage.db import Database, DatabaseConfig
from storage.records import JobRecord
from storage.repos.jobs import JobRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo


@dataclass
class Server:
    """A database of this test's own on the test cluster, and a superuser connection to take it away."""

    db: Database
    name: str
    admin: asyncpg.Connection

    async def go_away(self) -> None:
        """What a restart does to clients: every connection dropped, new ones refused meanwhile."""
        await self.admin.execute(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS false')
        await self.admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", self.name)

    async def come_back(self) -> None:
        await self.admin.execute(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS true')


@pytest_asyncio.fixture
async def server(postgres_url: str) -> AsyncIterator[Server]:
    name = f"t_{uuid.uuid4().hex[:16]}"
    admin = await asyncpg.connect(f"{postgres_url}/postgres")
    await admin.execute(f'CREATE DATABASE "{name}"')
    db = Database(DatabaseConfig(url=f"{postgres_url}/{name}"))
    await db.open()
    try:
        yield Server(db, name, admin)
    finally:
        await db.close()
        await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        await admin.close()


class GatedWork:
    """Our Work callable: the first job waits for `release`; none reports progress (the database is away)."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.ran: list[str] = []

    async def __call__(self, job: JobRecord, progress: Progress) -> dict[str, Any]:
        self.ran.append(job.source)
        if not self.started.is_set():
            self.started.set()
            await self.release.wait()
        return {"chunks": 1}


async def test_no_job_hangs_when_postgresql_goes_away_and_comes_back(server: Server) -> None:
    kb_id = (await KnowledgeBaseRepo(server.db).create("restart", chunking={})).id
    work = GatedWork()
    backed_off, back = asyncio.Event(), asyncio.Event()

    async def wait(seconds: float) -> None:
        backed_off.set()
        await back.wait()

    runner = JobRunner(JobRepo(server.db), work, concurrency=1, renew_every=3600, wait=wait)
    await runner.start(adopt=False)
    try:
        first = await runner.submit(kb_id, "file", "first.md")
        second = await runner.submit(kb_id, "file", "second.md")
        await asyncio.wait_for(work.started.wait(), 10)

        await server.go_away()
        with pytest.raises(SQLAlchemyError):
            await runner.heartbeat()
        work.release.set()  # the work ends while its outcome cannot be stored: the worker backs off
        await asyncio.wait_for(backed_off.wait(), 10)
        await server.come_back()
        back.set()

        finished = [await asyncio.wait_for(runner.wait(job.id), 10) for job in (first, second)]
        await runner.heartbeat()
    finally:
        await runner.stop()
    assert [(job.status, job.attempts) for job in finished] == [("succeeded", 1), ("succeeded", 1)]
    assert work.ran == ["first.md", "second.md"]
