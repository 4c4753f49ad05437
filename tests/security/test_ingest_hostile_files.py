"""Hostile files fail their own job with one line naming the limit they broke, and every other chat goes on.

Each file is ingested through the chat path of a running service (real Weaviate, embedder, SQLite); while its job
runs, another chat's question is answered. The limits are set low here so that the drills take seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from bot.words.catalogue import catalogue
from tests.conftest import EmbeddedSettings
from tests.security.ingest_support import (
    PARKING,
    World,
    deep_json,
    header_repeating_csv,
    many_paragraphs,
    running_world,
)

MAX_CHARS = 50_000
MEMORY_MB = 256
SECONDS = 2.0
SPLIT = ": split it into smaller files"
TOO_LONG = f"The file's text is longer than {MAX_CHARS:,} characters (INGEST_MAX_TEXT_CHARS){SPLIT}"
TOO_MUCH_MEMORY = f"Reading the file needed more than {MEMORY_MB} MiB of memory (INGEST_EXTRACT_MEMORY_MB){SPLIT}"
TOO_SLOW = f"Reading the file took longer than {SECONDS:g} s (INGEST_EXTRACT_SECONDS){SPLIT}"
LIMITS = {"INGEST_MAX_TEXT_CHARS": MAX_CHARS, "INGEST_EXTRACT_MEMORY_MB": MEMORY_MB}


@pytest_asyncio.fixture
async def world(tmp_path: Path, embedded_settings: EmbeddedSettings) -> AsyncIterator[World]:
    async with running_world(tmp_path / "data", embedded_settings, INGEST_EXTRACT_SECONDS=60.0, **LIMITS) as running:
        yield running


@pytest_asyncio.fixture
async def stuck_world(tmp_path: Path, embedded_settings: EmbeddedSettings) -> AsyncIterator[World]:
    async with running_world(
        tmp_path / "data",
        embedded_settings,
        reader="tests.security.ingest_support:read_forever",
        INGEST_EXTRACT_SECONDS=SECONDS,
        **LIMITS,
    ) as running:
        yield running


async def _ingest_while_another_chat_asks(world: World, name: str, data: bytes, *, within: float) -> str:
    """Ingest a hostile file in chat A, ask in chat B meanwhile; the status message's last text."""
    ingesting = asyncio.create_task(world.ingest(name, data))
    await world.until_a_job("running", "failed")
    answer = await world.ask("Where do visitors park?")
    assert "Marigold" in answer.replies()[0]
    async with asyncio.timeout(within):
        status = await ingesting
    return status.edits[-1][1]


async def _failed_with(world: World, line: str) -> None:
    (job,) = await world.jobs()
    assert job.status == "failed"
    assert job.error == line
    assert await world.services.documents.in_kb(world.alpha.id) == []


@pytest.mark.parametrize(
    ("name", "data"),
    [("deep.json", deep_json(copies=75)), ("wide.csv", header_repeating_csv())],
    ids=["json_nested_900_deep", "csv_repeating_a_long_header"],
)
async def test_a_file_whose_text_would_multiply_past_the_cap_fails_with_the_cap_named(
    world: World, name: str, data: bytes
) -> None:
    shown = await _ingest_while_another_chat_asks(world, name, data, within=60)
    await _failed_with(world, TOO_LONG)
    assert catalogue("en").text("failure.text_too_long", max_chars=MAX_CHARS) in shown


async def test_a_page_of_hundreds_of_thousands_of_paragraphs_fails_with_the_memory_limit_named(world: World) -> None:
    shown = await _ingest_while_another_chat_asks(world, "page.html", many_paragraphs(), within=60)
    await _failed_with(world, TOO_MUCH_MEMORY)
    assert catalogue("en").text("failure.extract_memory", memory=f"{MEMORY_MB} MiB") in shown


async def test_a_file_whose_parser_never_returns_fails_at_the_deadline_while_other_chats_are_answered(
    stuck_world: World,
) -> None:
    ingesting = asyncio.create_task(stuck_world.ingest("stuck.md", b"# A file\n\nthat never finishes reading"))
    running = await stuck_world.until_a_job("running")
    answer = await stuck_world.ask("Where do visitors park?")
    assert PARKING.split(" on ")[0] in answer.replies()[0]
    assert (await stuck_world.services.job_repo.get(running.id)).status == "running"  # answered meanwhile
    async with asyncio.timeout(SECONDS + 30):
        status = await ingesting
    await _failed_with(stuck_world, TOO_SLOW)
    assert catalogue("en").text("failure.extract_timeout", seconds=round(SECONDS)) in status.edits[-1][1]
