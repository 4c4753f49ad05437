"""The tables file on disk: sheets written, replaced and dropped; queries read-only, capped in rows and time."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.errors import RefusedQuery
from storage.tables.records import Sheet, TableConfig
from storage.tables.store import TableStore

NUMBERS = Sheet("", [["n", "label"], *([str(i), f"row {i}"] for i in range(1, 2001))])


def _store(tmp_path: Path, **limits: float) -> TableStore:
    return TableStore(TableConfig(tmp_path / "tables.duckdb", **limits))  # type: ignore[arg-type]


async def test_a_result_past_the_row_cap_is_cut_and_says_so(tmp_path: Path) -> None:
    store = _store(tmp_path, max_rows=10)
    await store.write("kb", "doc", [NUMBERS])
    result = await store.run('SELECT n FROM "doc" ORDER BY n', ["kb"])
    assert [row[0] for row in result.rows] == list(range(1, 11))
    assert result.truncated
    assert result.tables == ("doc",)


async def test_a_query_past_its_time_limit_is_stopped(tmp_path: Path) -> None:
    store = _store(tmp_path, timeout=0.2)
    await store.write("kb", "doc", [NUMBERS])
    # 2000^3 = 8e9 rows: minutes of work, interrupted at 0.2 s.
    with pytest.raises(RefusedQuery) as refused:
        await store.run('SELECT sum(a.n * b.n * c.n) FROM "doc" a, "doc" b, "doc" c', ["kb"])
    assert refused.value.reason == "timeout=0.2s"
    # The file is fine afterwards.
    assert (await store.run('SELECT count(*) FROM "doc"', ["kb"])).rows == ((2000,),)


async def test_the_configuration_is_locked_and_external_access_off_even_for_a_query_the_guard_passed(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path)
    await store.write("kb", "doc", [NUMBERS])
    with pytest.raises(RefusedQuery) as refused:
        await store.run("SELECT getenv('HOME')", ["kb"])
    assert refused.value.reason.startswith("failed=")


async def test_sheets_are_tables_named_by_the_document_and_replaced_and_dropped_with_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    sheets = [Sheet("Stock", [["Item", "Units"], ["bolts", 4]]), Sheet("Notes", [["Text"], ["hello"]])]
    assert await store.write("kb", "doc", sheets) == 2
    assert [s.name for s in await store.schemas(["doc"], ["kb"])] == ["doc", "doc_2"]
    assert await store.write("kb", "doc", sheets[:1]) == 1
    assert [(s.name, s.sheet, s.row_count) for s in await store.schemas(["doc"], ["kb"])] == [("doc", "Stock", 1)]
    await store.write("kb", "doc2", [NUMBERS])
    await store.drop_documents(["doc"])
    assert [s.name for s in await store.schemas(["doc", "doc2"], ["kb"])] == ["doc2"]
    await store.drop_kb("kb")
    assert await store.schemas(["doc", "doc2"], ["kb"]) == []
    with pytest.raises(RefusedQuery):
        await store.run('SELECT * FROM "doc2"', ["kb"])


async def test_another_knowledge_base_s_table_is_out_of_reach(tmp_path: Path) -> None:
    store = _store(tmp_path)
    await store.write("kb", "doc", [NUMBERS])
    await store.write("payroll", "secret", [Sheet("", [["amount"], [1]])])
    assert await store.schemas(["doc", "secret"], ["kb"]) == (await store.schemas(["doc"], ["kb"]))
    with pytest.raises(RefusedQuery) as refused:
        await store.run('SELECT * FROM "doc", "secret"', ["kb"])
    assert refused.value.reason == "table=secret"
