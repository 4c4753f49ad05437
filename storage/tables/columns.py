"""A sheet's header row as safe, unique column names, and each column's type from its values."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

Cell = str | int | float | bool | dt.date | dt.datetime | dt.time | None

_NOT_WORD = re.compile(r"\W+")
# Numbers as a sheet writes them; not Python's float() alone, which also reads "nan", "inf" and "1_000". A leading
# zero ("007", a product code) keeps the text.
_INTEGER = re.compile(r"[+-]?(?:0|[1-9]\d{0,17})")
_DECIMAL = re.compile(r"[+-]?(?:(?:0|[1-9]\d*)(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
# DuckDB folds unquoted identifiers to lower case, so two names differing only in case would be one column.
_FOLD = str.casefold


def safe_names(headers: Sequence[str]) -> list[str]:
    """Each header as a lower-case word of letters, digits and '_' (Chinese stays), unique, never empty.

    An empty header becomes `column_<n>` (n counts from 1), one that starts with a digit gets a `c_` prefix, and a
    repeat gets `_2`, `_3`... so the model can write every name, and quoting one is never required.
    """
    names: list[str] = []
    taken: set[str] = set()
    for index, header in enumerate(headers, start=1):
        base = _NOT_WORD.sub("_", header.strip()).strip("_").lower() or f"column_{index}"
        if base[0].isdigit():
            base = f"c_{base}"
        name, suffix = base, 2
        while _FOLD(name) in taken:
            name, suffix = f"{base}_{suffix}", suffix + 1
        taken.add(_FOLD(name))
        names.append(name)
    return names


def column_type(values: Sequence[Cell]) -> str:
    """The narrowest DuckDB type holding every non-empty value: BIGINT, DOUBLE, DATE, TIMESTAMP, else VARCHAR."""
    present = [value for value in values if value is not None]
    if not present:
        return "VARCHAR"
    if all(isinstance(value, int) and not isinstance(value, bool) for value in present):
        return "BIGINT"
    if all(isinstance(value, int | float) and not isinstance(value, bool) for value in present):
        return "DOUBLE"
    if all(isinstance(value, dt.datetime) for value in present):
        return "TIMESTAMP"
    if all(isinstance(value, dt.date) and not isinstance(value, dt.datetime) for value in present):
        return "DATE"
    return "VARCHAR"


def typed(text: str) -> Cell:
    """A cell read as text (CSV) as the value it spells: an integer, a decimal number, an ISO date, else the text.

    Thousands separators are left alone: "1,200" is 1.2 in half of the world, so it stays text.
    """
    text = text.strip()
    if not text:
        return None
    if _INTEGER.fullmatch(text):
        return int(text)
    if _DECIMAL.fullmatch(text):
        return float(text)
    try:
        return dt.date.fromisoformat(text) if len(text) == 10 else text
    except ValueError:
        return text


def as_type(value: Cell, kind: str) -> Cell:
    """The value as its column's type stores it: text columns get text (numbers and dates written out)."""
    if value is None or kind != "VARCHAR":
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)
