"""What every benchmark reports alongside its figures: the commit, the machine, percentiles."""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.weaviate_cluster import running_cluster
from storage.db import Database, DatabaseConfig
from storage.weaviate.config import WeaviateConfig, WeaviateServerConfig
from storage.weaviate.server import WeaviateServer
from storage.weaviate.store import WeaviateStore, endpoints_from_urls

ROOT = Path(__file__).resolve().parent.parent


def percentile(values: list[float], fraction: float) -> float:
    """The value at `fraction` (0..1) of the sorted values, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def machine() -> str:
    """OS, architecture, core count and CPU model."""
    cpu = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, {cpu}"


def commit() -> str:
    """The short hash of the checked-out commit."""
    result = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return result.stdout.strip() or "unknown"


@asynccontextmanager
async def local_stack(weaviate_binary: Path, prefix: str) -> AsyncIterator[tuple[WeaviateStore, Database]]:
    """A fresh local Weaviate and SQLite store in a temporary folder, stopped again afterwards."""
    async with _local(weaviate_binary, Path(tempfile.mkdtemp(prefix=prefix))) as (store, db, _server):
        yield store, db


@asynccontextmanager
async def _local(weaviate_binary: Path, work: Path) -> AsyncIterator[tuple[WeaviateStore, Database, WeaviateServer]]:
    server = WeaviateServer(WeaviateServerConfig(binary=weaviate_binary, data_dir=work / "weaviate"))
    endpoint = await server.start()
    db = Database(DatabaseConfig(url=f"sqlite:///{work / 'bench.sqlite3'}"))
    await db.open()
    store = await WeaviateStore.connect(endpoint, WeaviateConfig())
    try:
        yield store, db, server
    finally:
        await store.close()
        await db.close()
        await server.stop()


@dataclass(frozen=True, slots=True)
class IndexStack:
    """A fresh Weaviate (one node, or a three-node cluster) with ragbot's store over it, SQLite beside it, and
    each node's server process and data dir, to measure their memory and size."""

    store: WeaviateStore
    db: Database
    pids: dict[str, int]
    data_dirs: dict[str, Path]
    replication_factor: int


@asynccontextmanager
async def index_stack(weaviate_binary: Path, prefix: str, *, cluster: bool = False) -> AsyncIterator[IndexStack]:
    """`local_stack`, or with `cluster` three weaviate-server processes on loopback (harness/weaviate_cluster.py)
    that the store writes to with replication factor 3 and reads from at consistency QUORUM."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    if not cluster:
        async with _local(weaviate_binary, work) as (store, db, server):
            assert server.pid is not None
            yield IndexStack(store, db, {"local": server.pid}, {"local": work / "weaviate"}, 1)
        return
    async with running_cluster(weaviate_binary, work / "cluster") as nodes:
        db = Database(DatabaseConfig(url=f"sqlite:///{work / 'bench.sqlite3'}"))
        await db.open()
        config = WeaviateConfig(replication_factor=3, consistency="QUORUM")
        store = await WeaviateStore.connect(endpoints_from_urls(nodes.http_urls, nodes.grpc_urls), config)
        try:
            pids = {node.name: nodes.pid(node.name) for node in nodes.nodes}
            yield IndexStack(
                store,
                db,
                {name: pid for name, pid in pids.items() if pid is not None},
                {node.name: node.data_dir for node in nodes.nodes},
                3,
            )
        finally:
            await store.close()
            await db.close()


def parse_arguments(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The parser's arguments plus the ones every benchmark takes: model, evaluation data and Weaviate binary."""
    parser.add_argument("--model-dir", type=Path, default=os.environ.get("EMBEDDING_MODEL_DIR"))
    parser.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    parser.add_argument("--weaviate-binary", type=Path, default=ROOT / "bin" / "weaviate-server")
    args = parser.parse_args()
    if args.model_dir is None:
        parser.error("--model-dir (or EMBEDDING_MODEL_DIR) is required")
    return args
