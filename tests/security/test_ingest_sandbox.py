"""The extraction child process: killed past its deadline, its memory or its text cap, and replaced for the next
file; a file's own error comes back as itself. Real child processes, no servers."""

from __future__ import annotations

import asyncio
import sys
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from rag.errors import CorruptDocument, DocumentTooLarge, ExtractionError, NoTextFound
from rag.ingest.sandbox import ExtractionSandbox, SandboxLimits, _Child

READER = "tests.security.ingest_support:read_or_hang"
LIMITS = SandboxLimits(memory_bytes=512 * 1024 * 1024, seconds=2.0, max_chars=10_000, idle=1)


@pytest_asyncio.fixture
async def sandbox() -> AsyncIterator[ExtractionSandbox]:
    sandbox = ExtractionSandbox(LIMITS, reader=READER)
    try:
        yield sandbox
    finally:
        await sandbox.close()


async def _reads_the_next_file(sandbox: ExtractionSandbox) -> None:
    document = await sandbox.extract(b"# Next\n\nA file read as usual.", filename="next.md")
    assert document.text == "# Next\n\nA file read as usual."


async def test_a_parser_that_never_returns_is_killed_at_the_deadline_and_the_next_file_is_read(
    sandbox: ExtractionSandbox,
) -> None:
    async with asyncio.timeout(LIMITS.seconds + 30):
        with pytest.raises(ExtractionError) as caught:
            await sandbox.extract(b"HANG", filename="stuck.md")
    assert caught.value.reason == "extract_timeout"
    assert str(caught.value).startswith("Reading the file took longer than 2 s (INGEST_EXTRACT_SECONDS)")
    await _reads_the_next_file(sandbox)


async def test_a_parser_that_takes_all_memory_stops_at_the_limit_and_the_next_file_is_read(
    sandbox: ExtractionSandbox,
) -> None:
    with pytest.raises(ExtractionError) as caught:
        await sandbox.extract(b"HOG", filename="hog.md")
    assert caught.value.reason == "extract_memory"
    assert str(caught.value).startswith("Reading the file needed more than 512 MiB of memory")
    await _reads_the_next_file(sandbox)


async def test_text_past_the_cap_is_refused_as_it_streams(sandbox: ExtractionSandbox) -> None:
    with pytest.raises(DocumentTooLarge) as caught:
        await sandbox.extract(b"word " * 5000, filename="long.txt")
    assert caught.value.reason == "text_too_long"
    assert str(caught.value).startswith("The file's text is longer than 10,000 characters (INGEST_MAX_TEXT_CHARS)")
    await _reads_the_next_file(sandbox)


@pytest.mark.parametrize(
    ("data", "name", "error", "reason"),
    [
        (b"", "empty.md", ExtractionError, "empty"),
        (b"   ", "blank.md", NoTextFound, "blank"),
        (b'{"a": [1, 2', "data.json", CorruptDocument, "damaged_json"),
    ],
)
async def test_a_files_own_error_comes_back_as_itself_and_the_reader_stays(
    sandbox: ExtractionSandbox, data: bytes, name: str, error: type[ExtractionError], reason: str
) -> None:
    with pytest.raises(error) as caught:
        await sandbox.extract(data, filename=name)
    assert type(caught.value) is error
    assert caught.value.reason == reason
    await _reads_the_next_file(sandbox)


async def test_one_reader_reads_file_after_file_and_a_killed_one_is_replaced(sandbox: ExtractionSandbox) -> None:
    first, second = [(await sandbox.extract(b"PID", filename="pid.txt")).text for _ in range(2)]
    assert first == second  # kept between files: a document pays a round trip, not a start
    with pytest.raises(ExtractionError):
        await sandbox.extract(b"HANG", filename="stuck.md")
    assert (await sandbox.extract(b"PID", filename="pid.txt")).text != first


async def test_sections_and_metadata_come_back_as_the_reader_gave_them(sandbox: ExtractionSandbox) -> None:
    document = await sandbox.extract(b"name,team\nAda,Core\n", filename="people.csv")
    assert document.mime_type == "text/csv"
    assert document.text == "name: Ada | team: Core"
    assert document.metadata == {"encoding": "utf-8"}


async def test_a_reader_killed_while_its_reply_fills_the_pipe_is_ended_at_once() -> None:
    """A refused reply (text past the cap) leaves the child writing into a pipe the parent no longer reads, and
    asyncio stops reading it once its buffer is full. Python 3.11's wait() returns only when every pipe has closed,
    which a pipe no one reads never does: CI's ingestion of a wide CSV hung there for good."""
    writes = "import sys; sys.stdout.buffer.write(b'x' * 50_000_000)"
    process = await asyncio.create_subprocess_exec(sys.executable, "-c", writes, stdin=PIPE, stdout=PIPE)
    child = _Child(process)

    async def paused() -> None:
        # StreamReader keeps no event for it: its own flag is the state this test is about.
        while not getattr(process.stdout, "_paused", False):  # noqa: ASYNC110
            await asyncio.sleep(0.01)

    async with asyncio.timeout(10):
        await paused()
    async with asyncio.timeout(10):
        await child.kill()
    assert process.returncode is not None
