"""The Grafana dashboard in docs/ read as data: the metric names its queries use, and those a scrape exposes."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from prometheus_client.metrics_core import Metric

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "ragbot-dashboard.json"

# PromQL words that read like names but are not metrics (aggregation modifiers, set operators).
_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}
)
# What a histogram's or summary's series add to its family's name.
_SERIES_SUFFIXES = ("_bucket", "_sum", "_count")


def load_dashboard(path: Path = DASHBOARD) -> dict[str, Any]:
    """The dashboard's JSON."""
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, those inside collapsed rows too."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads, a histogram's `_bucket`/`_sum`/`_count` series as its family."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values, which may hold anything
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # range durations
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)  # label lists
    expr = re.sub(r"\$\{?\w+\}?", "", expr)  # Grafana variables ($__rate_interval)
    names = set()
    for match in re.finditer(r"(?<![\w.])[A-Za-z_:][A-Za-z0-9_:]*", expr):
        word = match.group()
        if word in _KEYWORDS or expr[match.end() :].lstrip().startswith("("):
            continue  # a keyword or a function
        for suffix in _SERIES_SUFFIXES:
            word = word.removesuffix(suffix)
        names.add(word)
    return names


def used_metrics(dashboard: dict[str, Any]) -> dict[str, set[str]]:
    """Each panel's title and the metric names of its queries (and the metric the variables read, as "variables")."""
    used = {
        panel["title"]: set().union(*(metric_names(target["expr"]) for target in panel.get("targets", [])))
        for panel in panels(dashboard)
        if panel.get("targets")
    }
    variables = dashboard.get("templating", {}).get("list", [])
    used["variables"] = {
        found
        for variable in variables
        for found in re.findall(r"label_values\(\s*([A-Za-z_:][\w:]*)", str(variable.get("definition", "")))
    }
    return used


def exposed_names(families: Iterable[Metric]) -> set[str]:
    """The names a query may use for these families: a counter's with `_total`, any other's as it is."""
    return {family.name + "_total" if family.type == "counter" else family.name for family in families}


def missing_metrics(dashboard: dict[str, Any], exposed: set[str]) -> dict[str, set[str]]:
    """Per panel, the metric names its queries use that `exposed` lacks (empty when the dashboard is sound)."""
    missing = {title: names - exposed for title, names in used_metrics(dashboard).items()}
    return {title: names for title, names in missing.items() if names}
