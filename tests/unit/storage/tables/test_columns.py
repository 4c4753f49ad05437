"""Headers become safe unique column names; cells typed as a sheet means them."""

from __future__ import annotations

import datetime as dt

import pytest

from storage.tables.columns import column_type, safe_names, typed


def test_odd_headers_become_safe_unique_names() -> None:
    headers = ["Unit price", "Unit price", "", "产品 名称", "2024 total", "UNIT PRICE", "  ", "a-b/c"]
    assert safe_names(headers) == [
        "unit_price",
        "unit_price_2",
        "column_3",
        "产品_名称",
        "c_2024_total",
        "unit_price_3",
        "column_7",
        "a_b_c",
    ]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("12", 12),
        ("-3", -3),
        ("12.5", 12.5),
        ("1e3", 1000.0),
        ("007", "007"),  # a code, not a number
        ("1,200", "1,200"),
        ("nan", "nan"),
        ("2026-11-27", dt.date(2026, 11, 27)),
        ("  ", None),
        ("tea", "tea"),
    ],
)
def test_a_text_cell_is_read_as_the_value_it_spells(text: str, value: object) -> None:
    assert typed(text) == value


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        ([1, 2, None], "BIGINT"),
        ([1, 2.5], "DOUBLE"),
        ([1, "x"], "VARCHAR"),
        ([True, 1], "VARCHAR"),
        ([dt.date(2026, 1, 1), None], "DATE"),
        ([None, None], "VARCHAR"),
    ],
)
def test_a_column_takes_the_narrowest_type_of_its_values(values: list[object], kind: str) -> None:
    assert column_type(values) == kind  # type: ignore[arg-type]
