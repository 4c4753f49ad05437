"""A Weaviate that stops under a store: one clear IndexUnavailable, at once; a failing query stays its own error."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from weaviate.exceptions import WeaviateBaseError

from storage.errors import IndexUnavailable, ServerInUse
from storage.records import ChunkRecord
from storage.weaviate.config import WeaviateConfig, WeaviateServerConfig
from storage.weaviate.liveness import answers_ready
from storage.weaviate.schema import Collection
from storage.weaviate.server import WeaviateServer, free_ports
from storage.weaviate.store import WeaviateStore

ROOT = Path(__file__).resolve().parents[2]
SHARED_STOPPED = (
    "the Weaviate server of the running ragbot (pid {pid}) stopped while this command ran (it stops with that "
    "ragbot): start `ragbot serve` again, or stop it and run the command alone"
)
OWN_STOPPED = (
    "the local Weaviate server (pid {pid}) stopped unexpectedly: see weaviate.log in its data dir "
    "(`ragbot doctor` names it), then start ragbot again"
)


def _owner_script(binary: Path, data_dir: Path) -> str:
    """A ragbot-like owner: starts the server, says so, and on a line from stdin stops it and exits (serve's stop)."""
    return textwrap.dedent(f"""
        import asyncio, sys
        from pathlib import Path
        from storage.weaviate.config import WeaviateServerConfig
        from storage.weaviate.server import WeaviateServer

        async def main():
            config = WeaviateServerConfig(binary=Path({str(binary)!r}), data_dir=Path({str(data_dir)!r}))
            server = WeaviateServer(config)
            await server.start()
            print("ready", flush=True)
            await asyncio.to_thread(sys.stdin.readline)
            await server.stop()

        asyncio.run(main())
    """)


@pytest_asyncio.fixture
async def owner(weaviate_binary: Path, tmp_path: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """Another process owning a server on tmp_path, as `ragbot serve` does; told to stop through its stdin."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _owner_script(weaviate_binary, tmp_path),
        cwd=ROOT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    try:
        assert await asyncio.wait_for(process.stdout.readline(), 120) == b"ready\n"
        yield process
    finally:
        if process.returncode is None:
            _tell_to_stop(process)
            await asyncio.wait_for(process.wait(), 60)


def _tell_to_stop(process: asyncio.subprocess.Process) -> None:
    assert process.stdin is not None
    process.stdin.write(b"stop\n")


async def _attached_store(weaviate_binary: Path, data_dir: Path) -> WeaviateStore:
    """A store on the owner's server, reached as an admin command reaches it (the data dir is in use)."""
    sharer = WeaviateServer(WeaviateServerConfig(binary=weaviate_binary, data_dir=data_dir))
    with pytest.raises(ServerInUse) as in_use:
        await sharer.start()
    return await WeaviateStore.connect(sharer.attach_endpoint(in_use.value), WeaviateConfig())


def _chunk(kb_id: str, n: int) -> ChunkRecord:
    return ChunkRecord(
        chunk_id=f"00000000-0000-4000-8000-{n:012d}",
        kb_id=kb_id,
        document_id="d",
        segment_id=None,
        position=n,
        start=0,
        end=4,
        text="text",
        bm25_text="text",
    )


async def test_a_command_sharing_a_running_ragbots_server_is_told_when_it_stops_mid_query(
    owner: asyncio.subprocess.Process, weaviate_binary: Path, tmp_path: Path
) -> None:
    store = await _attached_store(weaviate_binary, tmp_path)
    await store.upsert_chunks([_chunk("kb", 1)], [[1.0, 0.0]])
    answered = asyncio.Event()

    async def search_until_it_fails() -> None:
        while True:
            await store.search_hybrid(Collection.CHUNKS, ["kb"], [1.0, 0.0], "text", 5)
            answered.set()

    searching = asyncio.create_task(search_until_it_fails())
    try:
        await asyncio.wait_for(answered.wait(), 30)
        _tell_to_stop(owner)
        with pytest.raises(IndexUnavailable) as stopped:
            await asyncio.wait_for(searching, 30)
        assert str(stopped.value) == SHARED_STOPPED.format(pid=owner.pid)
        # Every later call says the same at once: the server will not come back on these ports.
        with pytest.raises(IndexUnavailable, match=r"stopped while this command ran"):
            await asyncio.wait_for(store.delete_kb("kb"), 5)
        await asyncio.wait_for(owner.wait(), 60)
    finally:
        searching.cancel()
        await store.close()


async def test_a_store_on_its_own_server_says_that_server_stopped(weaviate_binary: Path, tmp_path: Path) -> None:
    server = WeaviateServer(WeaviateServerConfig(binary=weaviate_binary, data_dir=tmp_path))
    store = await WeaviateStore.connect(await server.start(), WeaviateConfig())
    pid = server.pid
    try:
        await server.stop()
        with pytest.raises(IndexUnavailable) as stopped:
            await asyncio.wait_for(store.count(Collection.CHUNKS, ["kb"]), 30)
        assert str(stopped.value) == OWN_STOPPED.format(pid=pid)
    finally:
        await store.close()


async def test_a_failing_query_on_a_running_server_stays_the_query_error(store: WeaviateStore, kb_id: str) -> None:
    await store.upsert_chunks([_chunk(kb_id, 7)], [[0.1] * 384])
    with pytest.raises(WeaviateBaseError) as failure:
        await store.search_vector(Collection.CHUNKS, [kb_id], [0.1, 0.2, 0.3], 5)
    assert not isinstance(failure.value, IndexUnavailable)
    await store.delete_kb(kb_id)


async def test_readiness_is_true_for_a_running_server_and_false_for_a_closed_port(
    weaviate_server: WeaviateServer,
) -> None:
    assert weaviate_server.endpoint is not None
    assert await answers_ready(weaviate_server.endpoint)
    (closed,) = free_ports(1)
    assert not await answers_ready(dataclasses.replace(weaviate_server.endpoint, http_port=closed))
