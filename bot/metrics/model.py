"""The chat model's figures: tokens in and out, and its errors by kind (rag.models.chat.ModelObserver)."""

from __future__ import annotations

from prometheus_client import Counter

from bot.metrics.group import MetricGroup


class ModelMetrics(MetricGroup):
    """`ragbot_model_tokens_total{direction,model}` and `ragbot_model_errors_total{kind}`."""

    def __init__(self) -> None:
        super().__init__()
        self._tokens = self._add(
            Counter(
                "ragbot_model_tokens_total",
                "Chat-model tokens: direction=in for prompts, out for answers (as the API reported, else tiktoken's).",
                ["direction", "model"],
                registry=None,
            )
        )
        self._errors = self._add(
            Counter(
                "ragbot_model_errors_total",
                "Chat-model calls that failed: timeout, rate_limited, server, auth, refused, connection, malformed.",
                ["kind"],
                registry=None,
            )
        )

    def tokens(self, model: str, direction: str, count: int) -> None:
        """`count` tokens of `model` went `direction` (in or out)."""
        self._tokens.labels(direction, model).inc(count)

    def error(self, kind: str) -> None:
        """One failed call."""
        self._errors.labels(kind).inc()
