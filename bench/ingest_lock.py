"""SQLite's write lock while a 60,000-chunk document is stored: the longest write transaction, and what small
concurrent writes (a chat's) suffer meanwhile, before and after in one run.

Each side runs in its own process against its own code: "before" a `git archive` of --before, "after" this tree.
A side opens a fresh SQLite file with that code's Database (its pragmas, its busy timeout), stores a 60,000-chunk
version of a document, then replaces it with another 60,000-chunk version while a second process writes one small
row every 50 ms. The measured span is the replacement up to the removal of the replaced rows (the index is left
out: a stub stands in for Weaviate). Reported: the longest write transaction (first write statement to commit),
the replacement's wall time, and the small writes that failed ("database is locked") or waited more than 1 s.

    .venv/bin/python -m bench.ingest_lock [--before REV] [--chunks N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "ea5697d"  # main before issue 20's document work
_PROBE_EVERY = 0.05
_SLOW = 1.0


def _version(kb_id: str, chunks: int, content: str) -> Any:
    from storage.records import ChunkRecord, DocumentVersion

    # ~600 characters a chunk, about what 150 tokens of prose take.
    body = (content + " lorem ipsum dolor sit amet ") * 20
    records, start, parts = [], 0, []
    for n in range(chunks):
        line = f"{n} {body}\n"
        chunk_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{content}/{n}"))
        records.append(ChunkRecord(chunk_id, kb_id, "", None, n, start, start + len(line), line, line))
        parts.append(line)
        start += len(line)
    text = "".join(parts)
    return DocumentVersion(kb_id, "upload:big.txt", "big.txt", "text/plain", content, "r", text, (), tuple(records))


class _NoIndex:
    """Stands in for Weaviate: removes nothing, answers at once."""

    async def delete_ids(self, _collection: Any, object_ids: Any) -> int:
        return len(object_ids)

    async def delete_document(self, _kb_id: str, _document_id: str) -> int:
        return 0


def _watch_write_transactions(db: Any) -> list[float]:
    """Seconds from each transaction's first write statement to its commit."""
    from sqlalchemy import event

    held: list[float] = []
    started: dict[int, float] = {}

    def write(conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().split(None, 1)[0].upper() in {"INSERT", "UPDATE", "DELETE"}:
            started.setdefault(id(conn), time.perf_counter())

    def end(conn: Any) -> None:
        begun = started.pop(id(conn), None)
        if begun is not None:
            held.append(time.perf_counter() - begun)

    engine = db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", write)
    event.listen(engine, "commit", end)
    event.listen(engine, "rollback", end)
    return held


async def _side(chunks: int) -> dict[str, Any]:
    from storage.db import Database, DatabaseConfig
    from storage.repos.documents import DocumentRepo
    from storage.repos.knowledge_bases import KnowledgeBaseRepo

    folder = Path(tempfile.mkdtemp(prefix="ingest-lock-"))
    url = f"sqlite:///{folder / 'ragbot.sqlite3'}"
    db = Database(DatabaseConfig(url=url))
    await db.open()
    kb = await KnowledgeBaseRepo(db).create("big", chunking={})
    documents = DocumentRepo(db)
    await documents.store_versions([(_version(kb.id, chunks, "first"), "doc-big")])
    second = _version(kb.id, chunks, "second")
    stop = folder / "stop"
    probe = subprocess.Popen(
        [sys.executable, __file__, "--probe", url, kb.id, str(stop)], stdout=subprocess.PIPE, env=os.environ.copy()
    )
    await asyncio.sleep(1.0)  # the probe's own start-up, outside the measured span
    held = _watch_write_transactions(db)
    began = time.perf_counter()
    if hasattr(documents, "writer"):
        from rag.ingest.cleanup import settle

        await documents.store_versions([(second, "doc-big")], existing={"doc-big"})
        await settle(documents, _NoIndex(), "doc-big")
    else:
        await documents.store_versions([(second, "doc-big")])
    wall = time.perf_counter() - began
    await asyncio.sleep(0.5)
    stop.touch()
    probe_out, _ = probe.communicate(timeout=60)
    await db.close()
    return {"longest_write_s": max(held), "writes": len(held), "wall_s": wall, **json.loads(probe_out)}


async def _probe(url: str, kb_id: str, stop: Path) -> dict[str, Any]:
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    from storage.db import Database, DatabaseConfig

    db = Database(DatabaseConfig(url=url))
    await db.open()
    latencies: list[float] = []
    failed = 0
    n = 0
    while not stop.exists():
        n += 1
        began = time.perf_counter()
        try:
            async with db.session() as session:
                await session.exec(
                    text("UPDATE knowledge_base SET description = :d WHERE id = :id").bindparams(d=str(n), id=kb_id)
                )
        except OperationalError as exc:  # what a chat turn would answer with an apology
            failed += 1 if "locked" in str(exc) else 0
        latencies.append(time.perf_counter() - began)
        await asyncio.sleep(_PROBE_EVERY)
    await db.close()
    ordered = sorted(latencies)
    return {
        "probe_writes": len(latencies),
        "probe_locked": failed,
        "probe_over_1s": sum(1 for value in latencies if value > _SLOW),
        "probe_p50_ms": 1000 * ordered[len(ordered) // 2],
        "probe_max_ms": 1000 * ordered[-1],
    }


def _run_side(tree: Path, chunks: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, __file__, "--side", str(chunks)], env=env, cwd=tree, check=True, capture_output=True, text=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BASELINE)
    parser.add_argument("--chunks", type=int, default=60_000)
    parser.add_argument("--side", type=int)
    parser.add_argument("--probe", nargs=3)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(asyncio.run(_side(args.side))))
        return
    if args.probe:
        url, kb_id, stop = args.probe
        print(json.dumps(asyncio.run(_probe(url, kb_id, Path(stop)))))
        return
    with tempfile.TemporaryDirectory(prefix="ingest-lock-before-") as before:
        archive = subprocess.run(["git", "archive", args.before], cwd=ROOT, check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", before], input=archive.stdout, check=True)
        sides = {f"before ({args.before})": _run_side(Path(before), args.chunks), "after": _run_side(ROOT, args.chunks)}
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    print(f"commit {head.stdout.strip()} · {os.cpu_count()} cores · {args.chunks:,} chunks replaced by {args.chunks:,}")
    print("| code | longest write txn (s) | write txns | replace wall (s) | small writes | locked | waited > 1 s "
          "| p50 (ms) | max (ms) |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, side in sides.items():
        print(
            f"| {name} | {side['longest_write_s']:.2f} | {side['writes']} | {side['wall_s']:.1f} | "
            f"{side['probe_writes']} | {side['probe_locked']} | {side['probe_over_1s']} | "
            f"{side['probe_p50_ms']:.1f} | {side['probe_max_ms']:.0f} |"
        )


if __name__ == "__main__":
    main()
