"""Uploads through the chat path: a long name is saved, the file is gone once its job ends, a restart sweeps what a
stopped process left, and `/faq delete` with an empty or short id deletes nothing."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio

from bot.app.services import build_services
from bot.knowledge.uploads import MAX_NAME_BYTES, upload_name
from bot.words import messages
from rag.ingest.faq_sheet import FaqEntry
from tests.conftest import EmbeddedSettings
from tests.security.ingest_support import World, running_world

LONG_NAME = "员工手册关于访客停车与门禁的详细说明" * 6 + ".md"  # 108 characters, 308 bytes


@pytest_asyncio.fixture
async def world(tmp_path: Path, embedded_settings: EmbeddedSettings) -> AsyncIterator[World]:
    async with running_world(tmp_path / "data", embedded_settings) as running:
        yield running


def _saved(world: World) -> list[Path]:
    uploads = world.uploads()
    return sorted(uploads.rglob("*")) if uploads.exists() else []


async def test_an_upload_named_past_255_bytes_is_ingested_not_left_queued(world: World) -> None:
    assert len(LONG_NAME.encode()) > 255
    status = await world.ingest(LONG_NAME, "# 停车\n\n访客请把车停在万寿菊车库的地下二层。".encode())
    (job,) = await world.jobs()
    assert job.status == "succeeded"
    stored = Path(job.source).name
    assert stored.endswith(".md")
    assert len(stored.encode()) <= MAX_NAME_BYTES
    assert LONG_NAME.startswith(stored.removesuffix(".md"))
    assert "indexed" in status.edits[-1][1]


def test_a_name_is_cut_by_bytes_on_a_character_boundary_keeping_its_extension() -> None:
    name = "访" * 100 + ".pdf"
    cut = upload_name(name)
    assert len(cut.encode()) <= MAX_NAME_BYTES
    assert cut == "访" * ((MAX_NAME_BYTES - 4) // 3) + ".pdf"
    assert upload_name("report.pdf") == "report.pdf"


async def test_an_uploaded_file_is_removed_once_its_job_ends(world: World) -> None:
    await world.ingest("parking.md", b"# Parking\n\nThe gate code is 7731.")
    await world.ingest("empty.md", b"   ")  # a job that fails
    assert sorted(job.status for job in await world.jobs()) == ["failed", "succeeded"]
    assert _saved(world) == []


async def test_a_restart_sweeps_the_uploads_of_jobs_that_ended_and_keeps_those_still_queued(
    tmp_path: Path, embedded_settings: EmbeddedSettings
) -> None:
    data = tmp_path / "data"
    async with running_world(data, embedded_settings) as first:
        await first.services.jobs.stop()  # the process that stops with uploads on disk
        repo, kb = first.services.job_repo, first.alpha.id
        ended, queued, stray = (first.uploads() / uuid.uuid4().hex / name for name in ("a.md", "b.md", "c.md"))
        for path in (ended, queued, stray):
            path.parent.mkdir(parents=True)
            path.write_text("# Left\n\nbehind")
        now = datetime.now(UTC)
        job = await repo.create(kb, "upload", str(ended), owner="dead", lease=300.0)
        await repo.start(job.id, "dead", lease=300.0)
        await repo.fail(job.id, "dead", "stopped")
        await repo.create(kb, "upload", str(queued), owner="alive", lease=3600.0)
        hour_ago = (now - timedelta(hours=1)).timestamp()
        os.utime(stray.parent, (hour_ago, hour_ago))  # no job names it, and it is too old to be saving now
    async with build_services(embedded_settings(data)) as services:
        await services.jobs.start()
        try:
            uploads = services.settings.data_dir / "uploads"
            assert sorted(uploads.rglob("*")) == [queued.parent, queued]
        finally:
            await services.jobs.stop()


async def _one_faq(world: World) -> str:
    await world.services.faq_importer.import_entries(world.alpha, [FaqEntry("Where is the gym?", ("Level 3.",))])
    (faq,) = await world.services.faqs.in_kb(world.alpha.id)
    return faq.id


@pytest.mark.parametrize("faq_id", ['""', '"   "', "abc", '" ab "'], ids=["empty", "blank", "3_chars", "padded"])
async def test_faq_delete_with_an_empty_or_short_id_deletes_nothing(world: World, faq_id: str) -> None:
    kept = await _one_faq(world)
    reply = await world.command(f"/faq delete {faq_id}")
    assert reply == messages.faq_id_too_short(4, "en")
    assert [faq.id for faq in await world.services.faqs.in_kb(world.alpha.id)] == [kept]


async def test_faq_delete_with_the_short_id_faq_list_shows_still_deletes(world: World) -> None:
    faq_id = await _one_faq(world)
    reply = await world.command(f"/faq delete {faq_id[:8]}")
    assert reply == messages.faq_deleted("Where is the gym?", "en")
    assert await world.services.faqs.in_kb(world.alpha.id) == []
