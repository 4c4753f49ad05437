"""What keeping spreadsheet rows in SQL costs: storing a sheet, and a process making its DuckDB copy from it.

For each size, a price-list-like sheet (an integer, a decimal, a date, two texts a row) is stored for a live document
version (TableStore.write), then a fresh process's store answers a count: its first query makes the table from SQL
(the materialization), a second one finds it up to date. A fresh SQLite file by default; `--postgres URL` for a
new database on the PostgreSQL cluster at URL (scripts/with-test-postgres.py names one in RAGBOT_TEST_DATABASE_URL).

    .venv/bin/python -m bench.tables_cache [--rows 10000,100000] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from harness.postgres import create_database
from storage.db import Database, DatabaseConfig
from storage.records import DocumentVersion
from storage.repos.document_writes import version_key
from storage.repos.documents import DocumentRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.tables.records import Sheet, TableConfig
from storage.tables.store import TableStore


def _sheet(rows: int) -> Sheet:
    header = ["Product", "Region", "Unit price", "Units", "Updated"]
    body = [
        [f"product {n}", ("north", "south", "east", "west")[n % 4], f"{n % 997}.5", str(n % 500), "2026-11-27"]
        for n in range(rows)
    ]
    return Sheet("", [header, *body])


async def _measure(db: Database, work: Path, rows: int) -> dict[str, float]:
    kb = await KnowledgeBaseRepo(db).create(f"bench-{rows}", chunking={})
    document_id = f"doc-{rows}"
    version = DocumentVersion(kb.id, f"upload:{rows}.csv", "prices", "text/csv", str(rows), "r", "", (), ())
    await DocumentRepo(db).store_versions([(version, document_id)])
    sheet = _sheet(rows)
    writer = TableStore(TableConfig(work / f"writer-{rows}.duckdb"), db)
    began = time.perf_counter()
    await writer.write(kb.id, document_id, [sheet], version=version_key(version))
    stored = time.perf_counter() - began
    reader = TableStore(TableConfig(work / f"reader-{rows}.duckdb"), db)
    query = f'SELECT count(*), sum(units) FROM "{document_id}"'
    began = time.perf_counter()
    result = await reader.run(query, [kb.id])
    first = time.perf_counter() - began
    assert result.rows[0][0] == rows
    began = time.perf_counter()
    await reader.run(query, [kb.id])
    again = time.perf_counter() - began
    return {"store": stored, "first_query": first, "cached_query": again}


async def _main(sizes: list[int], url: str | None) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        url = await create_database(url, "bench") if url else f"sqlite:///{work / 'ragbot.sqlite3'}"
        db = Database(DatabaseConfig(url=url))
        await db.open()
        try:
            print("rows\tstore s\tfirst query (makes the table) s\tquery on the copy s")
            for rows in sizes:
                figures = await _measure(db, work, rows)
                print(f"{rows}\t{figures['store']:.2f}\t{figures['first_query']:.2f}\t{figures['cached_query']:.3f}")
        finally:
            await db.close()


def main() -> None:
    """Parse the arguments and print one line per size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="10000,100000")
    parser.add_argument("--postgres")
    args = parser.parse_args()
    asyncio.run(_main([int(size) for size in args.rows.split(",")], args.postgres))


if __name__ == "__main__":
    main()
