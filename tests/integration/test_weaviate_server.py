"""The local weaviate-server supervisor: loopback ports, restart with data, side-by-side instances, no orphans."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from storage.errors import IndexUnavailable, ServerInUse, WeaviateBinaryMissing
from storage.records import ChunkRecord
from storage.weaviate.config import WeaviateConfig, WeaviateEndpoint, WeaviateServerConfig
from storage.weaviate.schema import Collection
from storage.weaviate.server import WeaviateServer
from storage.weaviate.store import WeaviateStore

ROOT = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]


async def _wait_dead(pid: int, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        await asyncio.sleep(0.1)
    return False


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


async def test_two_servers_run_side_by_side_and_one_finds_its_data_after_restart(
    weaviate_binary: Path, tmp_path: Path
) -> None:
    first = WeaviateServer(WeaviateServerConfig(binary=weaviate_binary, data_dir=tmp_path / "a"))
    second = WeaviateServer(WeaviateServerConfig(binary=weaviate_binary, data_dir=tmp_path / "b"))
    endpoint_a, endpoint_b = await asyncio.gather(first.start(), second.start())
    try:
        assert endpoint_a.http_port != endpoint_b.http_port
        assert endpoint_a.grpc_port != endpoint_b.grpc_port
        assert endpoint_a.http_host == "127.0.0.1"
        store = await WeaviateStore.connect(endpoint_a, WeaviateConfig())
        await store.upsert_chunks([_chunk("kb", 1), _chunk("kb", 2)], [[1.0, 0.0], [0.0, 1.0]])
        await store.close()
    finally:
        await second.stop()
        await first.stop()
    node_name = (tmp_path / "a" / "ragbot-node-name").read_text()

    endpoint = await first.start()
    try:
        assert (tmp_path / "a" / "ragbot-node-name").read_text() == node_name
        store = await WeaviateStore.connect(endpoint, WeaviateConfig())
        assert await store.count(Collection.CHUNKS, ["kb"]) == 2
        await store.close()
    finally:
        await first.stop()


async def test_stop_ends_the_process_and_removes_the_pid_file(weaviate_binary: Path, tmp_path: Path) -> None:
    server = WeaviateServer(WeaviateServerConfig(binary=weaviate_binary, data_dir=tmp_path))
    await server.start()
    pid = server.pid
    assert pid is not None
    assert (tmp_path / "ragbot-weaviate.pid").read_text() == f"{pid} {os.getpid()}"
    await server.stop()
    assert await _wait_dead(pid, 1.0)
    assert not (tmp_path / "ragbot-weaviate.pid").exists()


async def test_a_killed_server_is_started_again_on_its_ports_with_its_data_and_its_store_follows(
    weaviate_binary: Path, tmp_path: Path
) -> None:
    server = WeaviateServer(WeaviateServerConfig(binary=weaviate_binary, data_dir=tmp_path))
    endpoint = await server.start()
    store = await WeaviateStore.connect(endpoint, WeaviateConfig())
    restarts: asyncio.Queue[WeaviateEndpoint] = asyncio.Queue()

    async def restarted(new: WeaviateEndpoint) -> None:
        await store.follow_restart(new)
        restarts.put_nowait(new)

    try:
        await store.upsert_chunks([_chunk("kb", 1), _chunk("kb", 2)], [[1.0, 0.0], [0.0, 1.0]])
        server.supervise(restarted)
        killed = server.pid
        assert killed is not None
        os.kill(killed, signal.SIGKILL)
        new = await asyncio.wait_for(restarts.get(), 60)
        assert (new.http_port, new.grpc_port) == (endpoint.http_port, endpoint.grpc_port)
        assert new.server_pid not in (None, killed)
        assert await store.count(Collection.CHUNKS, ["kb"]) == 2
        await server.stop()  # asked: not started again
        assert await _wait_dead(new.server_pid or 0, 5.0)
        assert restarts.empty()
        assert server.pid is None
    finally:
        await store.close()
        await server.stop()


def _supervisor_script(binary: Path, data_dir: Path, then: str) -> str:
    """A separate ragbot-like process: start a server on `data_dir`, print its pid, then run `then`."""
    return textwrap.dedent(f"""
        import asyncio, os, signal, sys
        from pathlib import Path
        from storage.weaviate.config import WeaviateServerConfig
        from storage.weaviate.server import WeaviateServer

        async def main():
            config = WeaviateServerConfig(binary=Path({str(binary)!r}), data_dir=Path({str(data_dir)!r}))
            server = WeaviateServer(config)
            await server.start()
            print(server.pid, flush=True)
            {then}

        asyncio.run(main())
    """)


async def test_server_dies_with_a_crashed_parent(weaviate_binary: Path, tmp_path: Path) -> None:
    script = _supervisor_script(weaviate_binary, tmp_path, then="os.kill(os.getpid(), signal.SIGKILL)")
    parent = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert parent.returncode == -signal.SIGKILL, parent.stderr
    child = int(parent.stdout.strip())
    assert await _wait_dead(child), f"weaviate-server {child} outlived its killed parent"


async def test_a_data_dir_owned_by_a_live_ragbot_is_not_taken_over(weaviate_binary: Path, tmp_path: Path) -> None:
    wait_then_stop = "await asyncio.to_thread(sys.stdin.readline); await server.stop()"
    script = _supervisor_script(weaviate_binary, tmp_path, then=wait_then_stop)
    owner = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, cwd=ROOT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert owner.stdout is not None
    assert owner.stdin is not None
    owned_pid = int(await asyncio.wait_for(owner.stdout.readline(), 120))
    try:
        second = WeaviateServer(WeaviateServerConfig(binary=weaviate_binary, data_dir=tmp_path))
        with pytest.raises(ServerInUse, match="in use by another ragbot") as in_use:
            await second.start()
        assert _alive(owned_pid)
        shared = await WeaviateStore.connect(second.attach_endpoint(in_use.value), WeaviateConfig())
        assert await shared.count(Collection.CHUNKS, ["nothing-here"]) == 0
        await shared.close()
    finally:
        owner.stdin.write(b"stop\n")
        await owner.stdin.drain()
        assert await asyncio.wait_for(owner.wait(), 60) == 0


async def test_an_orphan_whose_owner_is_gone_is_stopped_before_a_new_start(
    weaviate_binary: Path, tmp_path: Path
) -> None:
    # An orphan from a crash where the death signal could not act: a process named like the
    # server, holding the pid file, whose recorded owner no longer exists.
    fake_server = tmp_path / "weaviate-server-orphan"
    fake_server.symlink_to("/bin/sleep")
    orphan = subprocess.Popen([str(fake_server), "300"], start_new_session=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead_owner = gone.pid
    (tmp_path / "ragbot-weaviate.pid").write_text(f"{orphan.pid} {dead_owner}")
    server = WeaviateServer(WeaviateServerConfig(binary=weaviate_binary, data_dir=tmp_path))
    await server.start()
    try:
        assert orphan.wait(timeout=30) == -signal.SIGTERM
        assert server.pid is not None
        assert server.pid != orphan.pid
    finally:
        await server.stop()


async def test_missing_binary_says_how_to_install_it(tmp_path: Path) -> None:
    server = WeaviateServer(WeaviateServerConfig(binary=tmp_path / "nope", data_dir=tmp_path / "data"))
    with pytest.raises(WeaviateBinaryMissing, match="make weaviate"):
        await server.start()
    assert not (tmp_path / "data").exists()


async def test_unwritable_data_dir_is_refused_before_anything_starts(weaviate_binary: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    server = WeaviateServer(WeaviateServerConfig(binary=weaviate_binary, data_dir=blocker / "weaviate"))
    with pytest.raises(IndexUnavailable, match="not writable"):
        await server.start()
    assert server.pid is None
