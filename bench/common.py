"""What every benchmark reports alongside its figures: the commit, the machine, percentiles."""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from storage.db import Database, DatabaseConfig
from storage.weaviate.config import WeaviateConfig, WeaviateServerConfig
from storage.weaviate.server import WeaviateServer
from storage.weaviate.store import WeaviateStore

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
    work = Path(tempfile.mkdtemp(prefix=prefix))
    server = WeaviateServer(WeaviateServerConfig(binary=weaviate_binary, data_dir=work / "weaviate"))
    endpoint = await server.start()
    db = Database(DatabaseConfig(url=f"sqlite:///{work / 'bench.sqlite3'}"))
    await db.open()
    store = await WeaviateStore.connect(endpoint, WeaviateConfig())
    try:
        yield store, db
    finally:
        await store.close()
        await db.close()
        await server.stop()


def parse_arguments(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The parser's arguments plus the ones every benchmark takes: model, evaluation data and Weaviate binary."""
    parser.add_argument("--model-dir", type=Path, default=os.environ.get("EMBEDDING_MODEL_DIR"))
    parser.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    parser.add_argument("--weaviate-binary", type=Path, default=ROOT / "bin" / "weaviate-server")
    args = parser.parse_args()
    if args.model_dir is None:
        parser.error("--model-dir (or EMBEDDING_MODEL_DIR) is required")
    return args
