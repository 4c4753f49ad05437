"""Scheduled URL re-syncs end to end: `/ingest URL --every`, conditional fetches against a real HTTP server,
re-indexing only what changed, and the chat told when a page is gone or keeps failing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_asyncio
from aiohttp import web
from sqlmodel import col, select

from bot.app.schedule import build_scheduler
from bot.knowledge.ingestion import FULL_FETCH_EVERY
from bot.knowledge.schedules import URL_SYNC, Scheduler
from bot.metrics.service import registry_of
from bot.types import ConversationKey
from fakes.base import start_local
from rag.errors import FetchError
from rag.ingest.addresses import AddressPolicy
from rag.ingest.fetch import Validators, fetch_url
from storage.models import Chunk
from storage.records import JobRecord, MessageRecord, ScheduleRecord
from tests.conftest import EmbeddedSettings
from tests.security.ingest_support import CHAT_A, World, running_world
from tests.support.chat import RecordingTarget

LOOPBACK = AddressPolicy.allowing("127.0.0.0/8")
FIRST = "# Badges\n\nLost badges are replaced at the front desk of building Juniper."
SECOND = "# Badges\n\nLost badges are now replaced at the security office of building Sequoia."


@dataclass
class Page:
    """A web page an admin scheduled: its body, ETag and status can change; each request is kept."""

    body: str = FIRST
    etag: str = '"v1"'
    status: int = 200
    moved_to: str = ""
    asked: list[dict[str, str]] = field(default_factory=list)
    url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.asked.append(dict(request.headers))
        if self.moved_to:
            raise web.HTTPFound(self.moved_to)
        if self.status != 200:
            return web.Response(status=self.status, text="gone")
        if request.headers.get("If-None-Match") == self.etag:
            return web.Response(status=304, headers={"ETag": self.etag})
        return web.Response(text=self.body, content_type="text/markdown", headers={"ETag": self.etag})


@pytest_asyncio.fixture
async def page() -> AsyncIterator[Page]:
    served = Page()
    app = web.Application()
    app.router.add_get("/badges.md", served.handle)
    runner, port = await start_local(app)
    served.url = f"http://127.0.0.1:{port}/badges.md"
    try:
        yield served
    finally:
        await runner.cleanup()


@dataclass
class Synced:
    """The service with its scheduler, and the chats it posted notices into."""

    world: World
    scheduler: Scheduler
    told: list[tuple[ConversationKey, RecordingTarget]] = field(default_factory=list)

    async def schedule(self) -> ScheduleRecord:
        (found,) = [row for row in await self.world.services.schedules.all() if row.kind == URL_SYNC]
        return found

    async def sync(self) -> JobRecord:
        """Run the page's schedule now, as a firing would, and wait for its job."""
        before = {job.id for job in await self.world.jobs()}
        await self.scheduler.run(await self.schedule())
        (job,) = [job for job in await self.world.jobs() if job.id not in before]
        return await self.world.services.jobs.wait(job.id)

    async def chunks(self) -> list[str]:
        """The text of every chunk of the page's document, from SQL."""
        (document,) = await self.world.services.documents.in_kb(self.world.alpha.id)
        async with self.world.services.db.session() as session:
            return list(await session.exec(select(Chunk.text).where(col(Chunk.document_id) == document.id)))

    def said(self) -> list[str]:
        """Every notice posted into a chat, as its people read it."""
        return [text for _, target in self.told for text in target.replies()]


@pytest_asyncio.fixture
async def synced(tmp_path: Path, embedded_settings: EmbeddedSettings) -> AsyncIterator[Synced]:
    async with running_world(tmp_path / "data", embedded_settings, URL_FETCH_ALLOWED_NETWORKS="127.0.0.0/8") as world:
        scheduler = build_scheduler(world.services, world.manager, owner="test-process")
        synced = Synced(world, scheduler)

        async def chat_of(key: ConversationKey, question: MessageRecord) -> RecordingTarget:
            target = RecordingTarget()
            synced.told.append((key, target))
            return target

        world.manager.resume_on("test", chat_of)
        yield synced


async def test_an_unchanged_page_costs_one_conditional_request_and_a_changed_one_is_reindexed(
    synced: Synced, page: Page
) -> None:
    reply = await synced.world.command(f"/ingest {page.url} --every 1d")
    assert "every 1d" in reply
    schedule = await synced.schedule()
    assert (schedule.every_seconds, schedule.etag) == (86_400, '"v1"')
    assert "Juniper" in " ".join(await synced.chunks())

    unchanged = await synced.sync()
    assert unchanged.result["not_modified"] is True
    runs = registry_of(synced.world.services.metrics.scheduler)
    assert runs.get_sample_value("ragbot_scheduler_runs_total", {"schedule_kind": "url_sync", "outcome": "ran"}) == 1
    assert page.asked[-1]["If-None-Match"] == '"v1"'
    assert (await synced.schedule()).last_outcome == "not modified"

    page.body, page.etag = SECOND, '"v2"'
    changed = await synced.sync()
    assert changed.status == "succeeded"
    assert not changed.result.get("unchanged")
    chunks = " ".join(await synced.chunks())
    assert "Sequoia" in chunks
    assert "Juniper" not in chunks
    assert (await synced.schedule()).etag == '"v2"'
    answer = await synced.world.ask("Where are lost badges replaced?", CHAT_A)
    assert "Sequoia" in answer.replies()[0]


async def test_a_server_that_keeps_its_etag_while_the_page_changes_is_caught_by_a_full_fetch(
    synced: Synced, page: Page
) -> None:
    await synced.world.command(f"/ingest {page.url} --every 1d")
    page.body = SECOND  # under the same ETag "v1": a conditional fetch hears 304 (a broken server)
    for _ in range(FULL_FETCH_EVERY - 1):
        assert (await synced.sync()).result.get("not_modified") is True
    full = await synced.sync()
    assert "If-None-Match" not in page.asked[-1]
    assert not full.result.get("unchanged")
    assert "Sequoia" in " ".join(await synced.chunks())


async def test_a_gone_page_is_kept_and_reported_once_to_the_chat_that_scheduled_it(synced: Synced, page: Page) -> None:
    await synced.world.command(f"/ingest {page.url} --every 1d")
    page.status = 410
    assert (await synced.sync()).status == "failed"
    assert (await synced.sync()).status == "failed"
    said = synced.said()
    assert len(said) == 1, said
    assert "410" in said[0]
    assert page.url in said[0]
    assert "Juniper" in " ".join(await synced.chunks())  # what was indexed stays
    assert (await synced.schedule()).failures == 2


async def test_a_page_failing_three_times_in_a_row_is_reported_once(synced: Synced, page: Page) -> None:
    await synced.world.command(f"/ingest {page.url} --every 1d")
    page.status = 503
    for _ in range(2):
        await synced.sync()
    assert synced.said() == []
    await synced.sync()
    (said,) = synced.said()
    assert "3 times" in said
    page.status = 200
    await synced.sync()
    assert (await synced.schedule()).failures == 0


async def test_a_page_that_now_redirects_to_a_refused_address_is_refused_as_at_ingestion(
    synced: Synced, page: Page
) -> None:
    await synced.world.command(f"/ingest {page.url} --every 1d")
    page.moved_to = "http://169.254.169.254/latest/meta-data/"
    refused = await synced.sync()
    assert refused.status == "failed"
    assert "169.254.169.254" in refused.error
    assert "not fetched" in refused.error
    assert "Juniper" in " ".join(await synced.chunks())


async def test_jobs_shows_the_schedule_and_sync_every_off_stops_it(synced: Synced, page: Page) -> None:
    await synced.world.command(f"/ingest {page.url} --every 6h")
    listed = await synced.world.command("/jobs")
    assert page.url in listed
    assert "every 6h" in listed
    assert "no longer" in await synced.world.command("/sync every off")
    assert [row for row in await synced.world.services.schedules.all() if row.kind == URL_SYNC] == []


async def test_a_bad_period_is_refused_with_the_format_and_nothing_is_queued(synced: Synced, page: Page) -> None:
    for period in ("soon", "1m", "99999w"):
        reply = await synced.world.command(f"/ingest {page.url} --every {period}")
        assert "30m" in reply or "15m" in reply, reply
    assert "a number and a unit" in await synced.world.command(f"/ingest {page.url} --every")
    assert "never store" in await synced.world.command(f"/ingest {page.url}?token=s3cret --every 1d")
    assert "web addresses" in await synced.world.command("/ingest --every 1d")
    assert await synced.world.jobs() == []
    assert await synced.world.services.schedules.all() == []


async def test_sync_now_fetches_the_scheduled_pages_and_follows_them(synced: Synced, page: Page) -> None:
    assert "no scheduled web pages" in await synced.world.command("/sync")
    await synced.world.command(f"/ingest {page.url} --every 1d")
    page.body, page.etag = SECOND, '"v2"'
    reply = await synced.world.command("/sync")
    assert "Fetching the scheduled web page again now." in reply
    assert "Sequoia" in " ".join(await synced.chunks())


async def test_a_304_to_an_unconditional_request_is_an_error_and_one_without_an_etag_keeps_the_sent_one(
    page: Page,
) -> None:
    page.etag = '"v1"'
    fetched = await fetch_url(page.url, policy=LOOPBACK, validators=Validators('"v1"'))
    assert fetched.not_modified
    assert fetched.validators.etag == '"v1"'

    async def bare_304(request: web.Request) -> web.Response:
        return web.Response(status=304)

    app = web.Application()
    app.router.add_get("/", bare_304)
    runner, port = await start_local(app)
    url = f"http://127.0.0.1:{port}/"
    try:
        kept = await fetch_url(url, policy=LOOPBACK, validators=Validators('"v7"', "Tue, 01 Sep 2026 00:00:00 GMT"))
        assert kept.validators == Validators('"v7"', "Tue, 01 Sep 2026 00:00:00 GMT")
        with pytest.raises(FetchError, match="304"):
            await fetch_url(url, policy=LOOPBACK)
    finally:
        await runner.cleanup()


async def test_deleting_a_scheduled_document_or_its_knowledge_base_stops_its_schedule(
    synced: Synced, page: Page
) -> None:
    services = synced.world.services
    await synced.world.command(f"/ingest {page.url} --every 1d")
    (document,) = await services.documents.in_kb(synced.world.alpha.id)
    await services.knowledge.delete_document("alpha", document.id)
    assert [row for row in await services.schedules.all() if row.kind == URL_SYNC] == []

    await synced.world.command(f"/ingest {page.url} --every 1d")
    await synced.world.command("/sync every 6h")
    await services.knowledge.delete("alpha")
    assert await services.schedules.all(kb_ids=[synced.world.alpha.id]) == []
