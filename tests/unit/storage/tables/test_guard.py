"""The SQL guard decides by DuckDB's parser: one SELECT over the allowed tables, nothing else."""

from __future__ import annotations

import pytest

from storage.errors import RefusedQuery
from storage.tables.guard import check_query

ALLOWED = {"doc-a", "doc-a_2"}
KNOWN = {*ALLOWED, "doc-other"}


@pytest.mark.parametrize(
    ("sql", "read"),
    [
        ('SELECT count(*) FROM "doc-a"', {"doc-a"}),
        ('select region, sum(price) from "doc-a" where price > 3 group by 1', {"doc-a"}),
        ('SELECT * FROM "doc-a" a JOIN main."doc-a_2" b ON a.id = b.id', {"doc-a", "doc-a_2"}),
        ('WITH t AS (SELECT * FROM "doc-a") SELECT count(*) FROM t', {"doc-a"}),
        ('DESCRIBE "doc-a"', {"doc-a"}),
        # A table's name in a string or a comment is not a table read.
        ("SELECT 'doc-other' AS name -- FROM \"doc-other\"", set()),
        ('SELECT count(*) FROM "doc-a";', {"doc-a"}),
    ],
)
def test_a_select_over_allowed_tables_passes_and_names_what_it_reads(sql: str, read: set[str]) -> None:
    assert check_query(sql, ALLOWED, KNOWN) == read


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT * FROM read_csv('/etc/passwd')", "table_function=read_csv"),
        ("SELECT * FROM read_text('/etc/passwd')", "table_function=read_text"),
        ("SELECT * FROM duckdb_tables()", "table_function=duckdb_tables"),
        ("SELECT * FROM '/etc/passwd'", "table=/etc/passwd"),
        ("COPY \"doc-a\" TO '/tmp/out.csv'", "type=COPY"),
        ("ATTACH '/tmp/x.duckdb'", "type=ATTACH"),
        ("INSTALL httpfs", "type=LOAD"),
        ("LOAD httpfs", "type=LOAD"),
        ('DROP TABLE "doc-a"', "type=DROP"),
        ("SET enable_external_access = true", "type=SET"),
        ("PRAGMA version", "type=PRAGMA"),
        ('SELECT 1; DROP TABLE "doc-a"', "statements=2"),
        ("", "statements=0"),
        ('SELECT * FROM "doc-other"', "table=doc-other"),
        ('SELECT * FROM "doc-a" WHERE x IN (SELECT x FROM "doc-other")', "table=doc-other"),
        ('SELECT * FROM other_db.main."doc-a"', "table=doc-a"),
        ("SELECT * FROM information_schema.tables", "table=tables"),
        ("SHOW TABLES", "show_catalog"),
        ('WITH "doc-other" AS (SELECT 1) SELECT * FROM "doc-other"', "cte_shadows_table=doc-other"),
        ("SELEC nonsense", "unparsable"),
        ('EXPLAIN SELECT * FROM "doc-a"', "type=EXPLAIN"),
    ],
)
def test_anything_else_is_refused_with_its_reason(sql: str, reason: str) -> None:
    with pytest.raises(RefusedQuery) as refused:
        check_query(sql, ALLOWED, KNOWN)
    assert refused.value.reason == reason
