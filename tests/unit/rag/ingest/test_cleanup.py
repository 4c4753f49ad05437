"""A clean-up runs to its end even when the task awaiting it is cancelled meanwhile."""

from __future__ import annotations

import asyncio

import pytest

from rag.ingest.cleanup import shielded


async def test_a_cancelled_caller_still_sees_its_cleanup_finish_and_is_cancelled_after() -> None:
    started, release, finished = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def cleanup() -> None:
        started.set()
        await release.wait()
        finished.set()

    caller = asyncio.create_task(shielded(cleanup()))
    await asyncio.wait_for(started.wait(), 5)
    caller.cancel()
    caller.cancel()  # twice, as a shutdown hurrying a job along would
    release.set()

    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(caller, 5)
    assert finished.is_set()


async def test_a_cleanup_uncancelled_returns_its_result_and_raises_its_own_error() -> None:
    async def value() -> int:
        return 7

    async def broken() -> None:
        raise ConnectionError("index went away")

    assert await shielded(value()) == 7
    with pytest.raises(ConnectionError):
        await shielded(broken())
