"""The tables: sheets stored in SQL with their document's live version, queried in each process's own DuckDB copy,
read-only, capped in rows and time; another process's copy catches up with what one wrote, replaced or deleted."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pytest

from storage.backup.archive import check_backup, make_backup, restore_database
from storage.db import Database, DatabaseConfig
from storage.errors import RefusedQuery
from storage.records import DocumentVersion
from storage.repos.document_writes import version_key
from storage.repos.documents import DocumentRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.tables.records import Sheet, TableConfig
from storage.tables.store import TableStore

NUMBERS = Sheet("", [["n", "label"], *([str(i), f"row {i}"] for i in range(1, 2001))])


@dataclass
class Shelf:
    """Knowledge bases and documents in the store, by name, so that sheets have a live version to belong to."""

    db: Database
    kbs: dict[str, str] = field(default_factory=dict)

    async def kb(self, name: str) -> str:
        if name not in self.kbs:
            self.kbs[name] = (await KnowledgeBaseRepo(self.db).create(name, chunking={})).id
        return self.kbs[name]

    async def write(
        self, store: TableStore, kb: str, document_id: str, sheets: list[Sheet], content: str = "v1"
    ) -> int:
        """Store a version `content` of the document (made live), then its sheets as that version's."""
        version = DocumentVersion(
            await self.kb(kb), f"upload:{document_id}.csv", document_id, "text/csv", content, "r", "", (), ()
        )
        await DocumentRepo(self.db).store_versions([(version, document_id)])
        return await store.write(await self.kb(kb), document_id, sheets, version=version_key(version))


def _store(tmp_path: Path, db: Database, name: str = "tables", **limits: float) -> TableStore:
    return TableStore(TableConfig(tmp_path / f"{name}.duckdb", **limits), db)  # type: ignore[arg-type]


@pytest.fixture
def shelf(db: Database) -> Shelf:
    return Shelf(db)


@pytest.fixture
async def other_process(db: Database) -> AsyncIterator[Database]:
    """A second engine on the same store, as another instance has."""
    second = Database(DatabaseConfig(url=db.config.url))
    await second.open(migrate=False)
    try:
        yield second
    finally:
        await second.close()


async def test_a_result_past_the_row_cap_is_cut_and_says_so(tmp_path: Path, db: Database, shelf: Shelf) -> None:
    store = _store(tmp_path, db, max_rows=10)
    await shelf.write(store, "kb", "doc", [NUMBERS])
    result = await store.run('SELECT n FROM "doc" ORDER BY n', [await shelf.kb("kb")])
    assert [row[0] for row in result.rows] == list(range(1, 11))
    assert result.truncated
    assert result.tables == ("doc",)


async def test_a_query_past_its_time_limit_is_stopped(tmp_path: Path, db: Database, shelf: Shelf) -> None:
    store = _store(tmp_path, db, timeout=0.2)
    await shelf.write(store, "kb", "doc", [NUMBERS])
    kb = await shelf.kb("kb")
    # 2000^3 = 8e9 rows: minutes of work, interrupted at 0.2 s.
    with pytest.raises(RefusedQuery) as refused:
        await store.run('SELECT sum(a.n * b.n * c.n) FROM "doc" a, "doc" b, "doc" c', [kb])
    assert refused.value.reason == "timeout=0.2s"
    # The file is fine afterwards.
    assert (await store.run('SELECT count(*) FROM "doc"', [kb])).rows == ((2000,),)


async def test_the_configuration_is_locked_and_external_access_off_even_for_a_query_the_guard_passed(
    tmp_path: Path, db: Database, shelf: Shelf
) -> None:
    store = _store(tmp_path, db)
    await shelf.write(store, "kb", "doc", [NUMBERS])
    with pytest.raises(RefusedQuery) as refused:
        await store.run("SELECT getenv('HOME')", [await shelf.kb("kb")])
    assert refused.value.reason.startswith("failed=")


async def test_sheets_are_tables_named_by_the_document_and_replaced_and_dropped_with_it(
    tmp_path: Path, db: Database, shelf: Shelf
) -> None:
    store = _store(tmp_path, db)
    kb = await shelf.kb("kb")
    sheets = [Sheet("Stock", [["Item", "Units"], ["bolts", 4]]), Sheet("Notes", [["Text"], ["hello"]])]
    assert await shelf.write(store, "kb", "doc", sheets) == 2
    assert [s.name for s in await store.schemas(["doc"], [kb])] == ["doc", "doc_2"]
    assert await shelf.write(store, "kb", "doc", sheets[:1]) == 1
    assert [(s.name, s.sheet, s.row_count) for s in await store.schemas(["doc"], [kb])] == [("doc", "Stock", 1)]
    await shelf.write(store, "kb", "doc2", [NUMBERS])
    await store.drop_documents(["doc"])
    assert [s.name for s in await store.schemas(["doc", "doc2"], [kb])] == ["doc2"]
    await store.drop_kb(kb)
    assert await store.schemas(["doc", "doc2"], [kb]) == []
    with pytest.raises(RefusedQuery):
        await store.run('SELECT * FROM "doc2"', [kb])


async def test_another_knowledge_base_s_table_is_out_of_reach(tmp_path: Path, db: Database, shelf: Shelf) -> None:
    store = _store(tmp_path, db)
    await shelf.write(store, "kb", "doc", [NUMBERS])
    await shelf.write(store, "payroll", "secret", [Sheet("", [["amount"], [1]])])
    kb = await shelf.kb("kb")
    assert await store.schemas(["doc", "secret"], [kb]) == (await store.schemas(["doc"], [kb]))
    with pytest.raises(RefusedQuery) as refused:
        await store.run('SELECT * FROM "doc", "secret"', [kb])
    assert refused.value.reason == "table=secret"


async def test_another_process_answers_from_sheets_one_process_wrote(
    tmp_path: Path, db: Database, shelf: Shelf, other_process: Database
) -> None:
    writer, reader = _store(tmp_path, db, "writer"), _store(tmp_path, other_process, "reader")
    await shelf.write(writer, "kb", "doc", [Sheet("Stock", [["Item", "Units"], ["bolts", 4], ["nuts", 6]])])
    kb = await shelf.kb("kb")
    assert [(s.name, s.sheet, s.row_count) for s in await reader.schemas(["doc"], [kb])] == [("doc", "Stock", 2)]
    assert (await reader.run('SELECT sum(units) FROM "doc"', [kb])).rows == ((10,),)
    assert not (tmp_path / "writer.duckdb").exists(), "writing needs no tables file"


async def test_a_reingested_document_s_new_rows_replace_another_process_s_copy(
    tmp_path: Path, db: Database, shelf: Shelf, other_process: Database
) -> None:
    writer, reader = _store(tmp_path, db, "writer"), _store(tmp_path, other_process, "reader")
    kb = await shelf.kb("kb")
    await shelf.write(writer, "kb", "doc", [Sheet("", [["n"], [1], [2]])])
    assert (await reader.run('SELECT count(*) FROM "doc"', [kb])).rows == ((2,),)

    await shelf.write(writer, "kb", "doc", [Sheet("", [["n"], [1], [2], [3]])], content="v2")

    assert (await reader.run('SELECT count(*) FROM "doc"', [kb])).rows == ((3,),)
    (schema,) = await reader.schemas(["doc"], [kb])
    assert schema.row_count == 3


async def test_a_version_replaced_meanwhile_does_not_write_its_sheets_over_the_live_one_s(
    tmp_path: Path, db: Database, shelf: Shelf
) -> None:
    store = _store(tmp_path, db)
    kb = await shelf.kb("kb")
    old = DocumentVersion(kb, "upload:doc.csv", "doc", "text/csv", "v1", "r", "", (), ())
    await DocumentRepo(db).store_versions([(old, "doc")])
    await shelf.write(store, "kb", "doc", [Sheet("", [["n"], [2]])], content="v2")

    # The older ingestion, switched before v2 and slower to get to its sheets.
    assert await store.write(kb, "doc", [Sheet("", [["n"], [1]])], version=version_key(old)) == 0

    assert (await store.run('SELECT n FROM "doc"', [kb])).rows == ((2,),)


async def test_a_deleted_document_s_table_is_gone_from_another_process_s_copy(
    tmp_path: Path, db: Database, shelf: Shelf, other_process: Database
) -> None:
    writer, reader = _store(tmp_path, db, "writer"), _store(tmp_path, other_process, "reader")
    kb = await shelf.kb("kb")
    await shelf.write(writer, "kb", "doc", [NUMBERS])
    await shelf.write(writer, "kb", "kept", [Sheet("", [["n"], [1]])])
    assert (await reader.run('SELECT count(*) FROM "doc"', [kb])).rows == ((2000,),)
    documents = DocumentRepo(db)

    # As a delete goes (bot.knowledge.bases): hidden at once, the row removed once nothing else of it remains.
    await documents.writer.mark_deleting("doc")
    assert await reader.schemas(["doc"], [kb]) == []
    assert await documents.writer.drop_document_row("doc")

    with pytest.raises(RefusedQuery) as refused:
        await reader.run('SELECT count(*) FROM "doc"', [kb])
    assert refused.value.reason == "table=doc"
    assert (await reader.run('SELECT count(*) FROM "kept"', [kb])).rows == ((1,),)
    await KnowledgeBaseRepo(db).delete(kb)
    assert await reader.schemas(["kept"], [kb]) == []


async def test_a_backup_carries_the_sheets_and_a_restored_store_answers_from_them(
    tmp_path: Path, db: Database, shelf: Shelf
) -> None:
    store = _store(tmp_path, db)
    await shelf.write(store, "kb", "doc", [Sheet("Stock", [["Item", "Units"], ["bolts", 4], ["nuts", 6]])])
    kb = await shelf.kb("kb")
    await make_backup(db.config, tmp_path / "backup", ragbot_version="test")
    await KnowledgeBaseRepo(db).delete(kb)
    with pytest.raises(RefusedQuery):
        await store.run('SELECT sum(units) FROM "doc"', [kb])
    await db.close()

    await restore_database(tmp_path / "backup", await check_backup(tmp_path / "backup", db.config), db.config)

    await db.open(migrate=False)
    fresh = _store(tmp_path, db, "fresh")
    assert (await fresh.run('SELECT sum(units) FROM "doc"', [kb])).rows == ((10,),)
    assert (await store.run('SELECT sum(units) FROM "doc"', [kb])).rows == ((10,),)


async def test_a_file_an_older_ragbot_wrote_is_made_up_to_date_not_trusted(
    tmp_path: Path, db: Database, shelf: Shelf
) -> None:
    kb = await shelf.kb("kb")
    with duckdb.connect(str(tmp_path / "tables.duckdb")) as old:
        old.execute(
            "CREATE TABLE _ragbot_tables (name VARCHAR PRIMARY KEY, document_id VARCHAR, kb_id VARCHAR, "
            "sheet VARCHAR, columns VARCHAR, row_count BIGINT)"
        )
        old.execute("INSERT INTO _ragbot_tables VALUES ('doc', 'doc', ?, '', '[[\"n\", \"n\", \"BIGINT\"]]', 1)", [kb])
        old.execute('CREATE TABLE "doc" AS SELECT 99 AS n')
    store = _store(tmp_path, db)

    await shelf.write(store, "kb", "doc", [Sheet("", [["n"], [1]])])

    assert (await store.run('SELECT n FROM "doc"', [kb])).rows == ((1,),)


async def test_a_with_name_may_not_stand_in_for_the_catalog_to_read_it_beside(
    tmp_path: Path, db: Database, shelf: Shelf
) -> None:
    store = _store(tmp_path, db)
    await shelf.write(store, "kb", "doc", [NUMBERS])
    await shelf.write(store, "payroll", "secret", [Sheet("", [["amount"], [1]])])
    await store.run('SELECT count(*) FROM "secret"', [await shelf.kb("payroll")])
    # The second branch is outside the WITH's scope: it would read the real catalog, other knowledge bases' included.
    sql = (
        "(WITH _ragbot_tables AS (SELECT 1 AS n) SELECT n FROM _ragbot_tables) "
        "UNION ALL SELECT count(*) FROM _ragbot_tables"
    )
    with pytest.raises(RefusedQuery) as refused:
        await store.run(sql, [await shelf.kb("kb")])
    assert refused.value.reason == "cte_shadows_table=_ragbot_tables"
