"""Failure drills of the stores, as a person in Telegram sees them.

- The local Weaviate that ragbot runs, killed (SIGKILL) mid-answer and mid-ingestion: ragbot's own supervisor
  starts it again on the same ports; answers in flight end (an answer, or an apology), later ones are answered, an
  ingestion it cut fails visibly and succeeds when run again, and the index holds exactly the chunks SQL holds.
- PostgreSQL restarted (`pg_ctl restart`, fast) while questions arrive: the service goes on without a restart.
- The disk under the SQLite file full: the question gets a clear reply, nothing is half-written, and the bot answers
  again once space is freed (a tmpfs mounted for the test: it needs root, and fails saying so without it).

Over the real services, python-telegram-bot and openai; no accepted question is left without a final answer.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from sqlalchemy import text

from bot.app.settings import Settings
from bot.words import messages
from fakes.openai_api import FakeOpenAI
from fakes.telegram import FakeTelegramBotAPI
from harness.instances import poll
from harness.postgres import PostgresCluster, create_database, postgres_cluster
from storage.errors import IndexUnavailable
from storage.records import JobRecord
from storage.weaviate.schema import Collection
from tests.conftest import EmbeddedSettings
from tests.support.drills import (
    TelegramWorld,
    fill,
    model_env,
    small_disk,
    telegram_env,
    telegram_reply,
    telegram_world,
    unfinished,
)

REPLY = "The VPN client is installed from the Software Center [1]. " + " ".join(f"w{n}" for n in range(14))
QUESTION = "How do I install the VPN client?"
# Seconds ragbot's supervisor gets to start a killed Weaviate again and its store to talk to it.
RESTART_WITHIN = 60.0


class Drill:
    """ragbot in Telegram over its own local Weaviate, with a chat model."""

    def __init__(self, world: TelegramWorld, model: FakeOpenAI) -> None:
        self.world = world
        self.model = model

    @property
    def fake(self) -> FakeTelegramBotAPI:
        return self.world.fake

    def kill_weaviate(self) -> int:
        """SIGKILL the weaviate-server process ragbot started; its pid."""
        server = self.world.services.weaviate_server
        assert server is not None, "ragbot runs no Weaviate of its own here"
        pid = server.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        return pid

    async def restarted(self, killed: int) -> None:
        """Wait until a new Weaviate process answers the store's searches."""
        services = self.world.services

        async def answering() -> bool:
            server = services.weaviate_server
            if server is None or server.pid in (None, killed):
                return False
            try:
                await services.store.count(Collection.CHUNKS, ["any"])
            except IndexUnavailable:
                return False
            return True

        assert await poll(answering, RESTART_WITHIN), f"Weaviate was not started again within {RESTART_WITHIN:g}s"


@pytest_asyncio.fixture(scope="module")
async def drill(
    tmp_path_factory: pytest.TempPathFactory, weaviate_binary: Path, model_dir: Path, tiktoken_dir: Path | None
) -> AsyncIterator[Drill]:
    async with FakeOpenAI() as model, FakeTelegramBotAPI() as fake:
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            RAGBOT_DATA_DIR=tmp_path_factory.mktemp("drills-stores"),
            WEAVIATE_BINARY=weaviate_binary,  # no WEAVIATE_URL: ragbot starts and supervises its own
            EMBEDDING_MODEL_DIR=model_dir,
            TIKTOKEN_CACHE_DIR=tiktoken_dir,
            **model_env(model),
            **telegram_env(fake),
        )
        async with telegram_world(fake, settings) as world:
            await world.services.jobs.start()
            try:
                yield Drill(world, model)
            finally:
                await world.services.jobs.stop()


async def test_weaviate_killed_mid_answer_is_started_again_and_no_question_is_lost(drill: Drill) -> None:
    drill.model.reply = REPLY
    drill.model.tokens_per_second = 10.0  # about 2.4 s of writing
    try:
        writing = drill.world.ask(QUESTION)
        await drill.fake.wait_for(lambda: drill.fake.drafts(writing), timeout=30)  # its sources are found
        killed = drill.kill_weaviate()
        during = drill.world.ask(QUESTION)  # arrives while Weaviate is down or starting
        assert (await telegram_reply(drill.fake, writing)).startswith(REPLY)
        shown = await telegram_reply(drill.fake, during, within=RESTART_WITHIN)
        assert shown.startswith(REPLY) or shown == messages.turn_failed("en")
        await drill.restarted(killed)
    finally:
        drill.model.tokens_per_second = 0.0
    after = drill.world.ask(QUESTION)
    shown = await telegram_reply(drill.fake, after)
    assert shown.startswith(REPLY)
    assert shown.endswith("[1] handbook.md")
    assert await unfinished(drill.world.services.db) == []


async def _ingest(drill: Drill, path: Path, kill_at_index: bool) -> tuple[JobRecord, int | None]:
    """Run an ingestion job of `path`; with `kill_at_index`, Weaviate is killed as the job starts writing to it."""
    services = drill.world.services
    kb = await services.knowledge.named("handbook")
    assert kb is not None
    killed: list[int] = []

    async def on_change(job: JobRecord) -> None:
        if kill_at_index and not killed and job.stage == "index":
            killed.append(drill.kill_weaviate())

    services.jobs.subscribe(on_change)
    job = await services.jobs.submit(kb.id, "file", str(path))
    ended = await asyncio.wait_for(services.jobs.wait(job.id), 60)
    return ended, (killed[0] if killed else None)


async def _index_matches_sql(drill: Drill) -> tuple[int, int]:
    """Objects the handbook holds in the index, and chunks its indexed documents hold in SQL."""
    services = drill.world.services
    kb = await services.knowledge.named("handbook")
    assert kb is not None
    documents = await services.documents.in_kb(kb.id)
    rows = sum(document.chunk_count for document in documents if document.status == "indexed")
    return await services.store.count(Collection.CHUNKS, [kb.id]), rows


async def test_weaviate_killed_mid_ingestion_fails_it_visibly_and_the_index_holds_no_duplicate(
    drill: Drill, tmp_path: Path
) -> None:
    manual = tmp_path / "printers.md"
    sections = [
        f"# Printer {n}\n\nPrinter {n} stands in room {100 + n} and prints {n} pages a minute.\n" for n in range(60)
    ]
    manual.write_text("\n".join(sections))
    cut, killed = await _ingest(drill, manual, kill_at_index=True)
    assert killed is not None
    assert cut.status == "failed"
    assert cut.error  # what an admin following the job is shown
    await drill.restarted(killed)
    again, _ = await _ingest(drill, manual, kill_at_index=False)
    assert again.status == "succeeded", again.error
    held, rows = await _index_matches_sql(drill)
    assert held == rows
    assert rows > 60


@dataclass
class PostgresDrill:
    """ragbot in Telegram on a PostgreSQL cluster of its own, which the drill restarts."""

    drill: Drill
    cluster: PostgresCluster


@pytest_asyncio.fixture(scope="module")
async def postgres(
    tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings
) -> AsyncIterator[PostgresDrill]:
    with postgres_cluster() as cluster:
        async with FakeOpenAI() as model, FakeTelegramBotAPI() as fake:
            settings = embedded_settings(
                tmp_path_factory.mktemp("drills-postgres"),
                DATABASE_URL=await create_database(cluster.url),
                **model_env(model),
                **telegram_env(fake),
            )
            async with telegram_world(fake, settings) as world:
                yield PostgresDrill(Drill(world, model), cluster)


async def test_postgresql_restarted_while_questions_arrive_is_recovered_without_a_restart(
    postgres: PostgresDrill,
) -> None:
    drill = postgres.drill
    drill.model.reply = REPLY
    first = drill.world.ask(QUESTION)
    assert (await telegram_reply(drill.fake, first)).startswith(REPLY)  # the pool holds connections from here
    drill.model.tokens_per_second = 10.0  # about 2.4 s of writing, over the restart
    try:
        writing = drill.world.ask(QUESTION)
        await drill.fake.wait_for(lambda: drill.fake.drafts(writing), timeout=30)
        restarting = asyncio.create_task(asyncio.to_thread(postgres.cluster.restart))
        during = [drill.world.ask(QUESTION) for _ in range(3)]
        await restarting
        assert (await telegram_reply(drill.fake, writing)).startswith(REPLY)
        for chat in during:
            shown = await telegram_reply(drill.fake, chat)
            assert shown.startswith(REPLY) or shown == messages.turn_failed("en"), shown
    finally:
        drill.model.tokens_per_second = 0.0
    after = drill.world.ask(QUESTION)
    assert (await telegram_reply(drill.fake, after)).startswith(REPLY)
    assert await unfinished(drill.world.services.db) == []


async def test_a_full_disk_under_sqlite_gets_a_clear_reply_and_the_bot_answers_again_once_space_is_freed(
    tmp_path: Path, embedded_settings: EmbeddedSettings
) -> None:
    """The data dir (the SQLite file) on a 16 MB tmpfs, filled to its last byte while the bot runs."""
    with small_disk(tmp_path / "data", "16m") as data:
        async with FakeTelegramBotAPI() as fake:
            settings = embedded_settings(data, **telegram_env(fake))
            async with telegram_world(fake, settings) as world:
                db = world.services.db
                assert "Software Center" in await telegram_reply(fake, world.ask(QUESTION))
                assert await unfinished(db) == []
                filler = fill(data)
                full = world.ask(QUESTION)
                assert await telegram_reply(fake, full) == messages.turn_failed("en")
                filler.unlink()
                assert "Software Center" in await telegram_reply(fake, world.ask(QUESTION))
                # A question stored before the disk filled up, if any, is closed once it has room again.
                assert await unfinished(db) == []
                assert fake.visible(full) == [messages.turn_failed("en")]
                async with db.engine.connect() as connection:
                    assert (await connection.execute(text("PRAGMA integrity_check"))).scalar() == "ok"
