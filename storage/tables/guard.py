"""What SQL the model may run, decided by DuckDB's own parser: one SELECT over allowed tables, nothing else.

The statement's type comes from `duckdb.extract_statements`, the tables it reads from its syntax tree
(`json_serialize_sql`), never from the text: a name in a string or a comment means nothing, a table function
(`read_csv`, `duckdb_tables`) is refused by kind, and a `FROM 'file'` replacement scan is a table of no document.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection, Iterator
from functools import cache
from typing import Any

import duckdb

from storage.errors import RefusedQuery

# DESCRIBE, SHOW <table> and SUMMARIZE parse as SELECT over a SHOW_REF wrapping the table's query.
_ALLOWED_TYPE = duckdb.StatementType.SELECT
_OWN_SCHEMAS = ("", "main")


def check_query(sql: str, allowed: Collection[str], known: Collection[str]) -> set[str]:
    """The tables `sql` reads; RefusedQuery unless it is one SELECT reading only tables named in `allowed`.

    `known` are all the document tables there are: a WITH name may not shadow one, since the tree does not say which
    scope a reference resolves in.
    """
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise RefusedQuery("unparsable") from exc
    if len(statements) != 1:
        raise RefusedQuery(f"statements={len(statements)}")
    kind = statements[0].type
    if kind != _ALLOWED_TYPE:
        raise RefusedQuery(f"type={kind.name}")
    tree = _tree(sql)
    ctes = set(_cte_names(tree))
    if shadowing := ctes & set(known):
        raise RefusedQuery(f"cte_shadows_table={sorted(shadowing)[0]}")
    read = {name for node in _nodes(tree) if (name := _table_read(node, allowed, ctes))}
    return read - ctes


def _table_read(node: dict[str, Any], allowed: Collection[str], ctes: Collection[str]) -> str:
    """The table a node of the tree reads ('' for none); RefusedQuery when it reads what it may not."""
    kind = node.get("type")
    if kind == "TABLE_FUNCTION":
        raise RefusedQuery(f"table_function={_function_name(node)}")
    if kind == "SHOW_REF" and node.get("query") is None:
        raise RefusedQuery("show_catalog")
    if kind != "BASE_TABLE":
        return ""
    name = str(node.get("table_name", ""))
    local = node.get("catalog_name", "") == "" and node.get("schema_name", "") in _OWN_SCHEMAS
    if not local or (name not in allowed and name not in ctes):
        raise RefusedQuery(f"table={name[:80]}")
    return name


def _tree(sql: str) -> dict[str, Any]:
    """The statement's syntax tree as DuckDB serialises it, parsed in an in-memory database of its own."""
    parser, lock = _parser()
    with lock:
        row = parser.execute("SELECT json_serialize_sql(?::VARCHAR)", [sql]).fetchone()
    tree = json.loads(row[0]) if row else {"error": True}
    if not isinstance(tree, dict) or tree.get("error"):
        raise RefusedQuery("not_serialisable")
    return tree


@cache
def _parser() -> tuple[duckdb.DuckDBPyConnection, threading.Lock]:
    """One in-memory database for every parse, and the lock its one connection is used under: opening one costs
    ~25 ms, parsing ~1 ms. Serialising a statement never runs it, so nothing a parse sees is ever written there."""
    return duckdb.connect(":memory:", config={"enable_external_access": False}), threading.Lock()


def _nodes(value: Any) -> Iterator[dict[str, Any]]:
    """Every object in the tree, depth first."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _cte_names(tree: dict[str, Any]) -> Iterator[str]:
    for node in _nodes(tree):
        cte_map = node.get("cte_map")
        if isinstance(cte_map, dict):
            for entry in cte_map.get("map", []):
                if isinstance(entry, dict):
                    yield str(entry.get("key", ""))


def _function_name(node: dict[str, Any]) -> str:
    function = node.get("function")
    return str(function.get("function_name", "")) if isinstance(function, dict) else ""
