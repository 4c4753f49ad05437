"""docs/grafana/ragbot-dashboard.json: valid JSON for Grafana, and every metric its queries use is one ragbot has."""

from __future__ import annotations

import copy

import pytest

from bot.metrics import ChatMetrics, PartMetrics, ServiceMetrics, registry_of
from tests.support.dashboard import exposed_names, load_dashboard, metric_names, missing_metrics, panels, used_metrics


def _registry_names() -> set[str]:
    """Every family an app's registry holds, those with no sample yet included."""
    registry = registry_of(*ServiceMetrics().groups(), ChatMetrics(), PartMetrics(lambda: 0, lambda: 0))
    return exposed_names(registry.collect())


def test_the_dashboard_is_a_grafana_dashboard_on_a_prometheus_datasource_variable() -> None:
    dashboard = load_dashboard()
    assert 36 <= dashboard["schemaVersion"] <= 41
    variables = {variable["name"]: variable for variable in dashboard["templating"]["list"]}
    assert (variables["datasource"]["type"], variables["datasource"]["query"]) == ("datasource", "prometheus")
    queried = [panel for panel in panels(dashboard) if panel["type"] != "row"]
    assert queried
    for panel in queried:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], panel["title"]
        assert all(target["expr"] for target in panel["targets"]), panel["title"]
    ids = [panel["id"] for panel in panels(dashboard)]
    assert len(ids) == len(set(ids))


def test_every_metric_the_dashboard_uses_is_in_the_apps_registry() -> None:
    assert missing_metrics(load_dashboard(), _registry_names()) == {}


def test_the_dashboard_covers_what_operators_watch() -> None:
    used = set().union(*used_metrics(load_dashboard()).values())
    assert {
        "ragbot_chat_first_visible_seconds",
        "ragbot_stage_seconds",
        "ragbot_chat_turns_total",
        "ragbot_chat_rate_limited_total",
        "ragbot_chat_undelivered_total",
        "ragbot_model_tokens_total",
        "ragbot_model_errors_total",
        "ragbot_job_seconds",
        "ragbot_scheduler_runs_total",
        "process_resident_memory_bytes",
        "process_open_fds",
    } <= used


def test_a_metric_the_dashboard_names_but_the_app_lacks_is_reported_with_its_panel() -> None:
    dashboard = copy.deepcopy(load_dashboard())
    panel = next(panel for panel in panels(dashboard) if panel.get("targets"))
    panel["targets"].append({"refId": "Z", "expr": 'sum(rate(ragbot_answers_typoed_total{platform="web"}[5m]))'})
    assert missing_metrics(dashboard, _registry_names()) == {panel["title"]: {"ragbot_answers_typoed_total"}}


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        (
            "histogram_quantile(0.95, sum by (le, platform) "
            '(rate(ragbot_chat_first_visible_seconds_bucket{instance=~"$instance"}[$__rate_interval])))',
            {"ragbot_chat_first_visible_seconds"},
        ),
        ("sum(ragbot_chat_undelivered_total) or vector(0)", {"ragbot_chat_undelivered_total"}),
        ("rate(a_sum[5m]) / rate(a_count[5m])", {"a"}),
        ('process_open_fds{job="x by (y)"} / on (instance) process_max_fds', {"process_open_fds", "process_max_fds"}),
    ],
)
def test_metric_names_are_read_from_promql(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names
