"""The chat side's figures: turns, time to first visible text, edits, 429s, platform errors, undelivered answers."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from bot.metrics.group import MetricGroup

# Time to first visible text and turn length: from a fast FAQ answer (~50 ms) to a slow model (~a minute).
CHAT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 60.0)


class ChatMetrics(MetricGroup):
    """Counters and histograms of the chat side; `observer(platform)` is every reply stream's StreamObserver."""

    def __init__(self) -> None:
        super().__init__()
        self._turns = self._add(
            Counter("ragbot_chat_turns_total", "Turns ended, by outcome.", ["platform", "outcome"], registry=None)
        )
        self._turn_seconds = self._add(
            Histogram(
                "ragbot_chat_turn_seconds",
                "How long a turn took, from the question to its stored answer.",
                ["platform"],
                buckets=CHAT_BUCKETS,
                registry=None,
            )
        )
        self._first_visible = self._add(
            Histogram(
                "ragbot_chat_first_visible_seconds",
                "How long a person waited for the first text of an answer.",
                ["platform"],
                buckets=CHAT_BUCKETS,
                registry=None,
            )
        )
        self._edits = self._add(
            Counter("ragbot_chat_edits_total", "Messages sent or edited on a platform.", ["platform"], registry=None)
        )
        self._rate_limited = self._add(
            Counter(
                "ragbot_chat_rate_limited_total",
                "429s (the platform's 'slow down') met while answering.",
                ["platform"],
                registry=None,
            )
        )
        self._undelivered = self._add(
            Counter(
                "ragbot_chat_undelivered_total",
                "Answers whose final text could not be delivered: must stay 0.",
                ["platform"],
                registry=None,
            )
        )
        self._platform_errors = self._add(
            Counter(
                "ragbot_platform_errors_total",
                "Sends and edits the platform failed on its side (5xx) or that did not reach it (network, timeout).",
                ["platform"],
                registry=None,
            )
        )

    def turn(self, platform: str, outcome: str, seconds: float) -> None:
        """Count one finished turn."""
        self._turns.labels(platform, outcome or "unknown").inc()
        self._turn_seconds.labels(platform).observe(seconds)

    def first_visible(self, platform: str, seconds: float) -> None:
        """How long a person waited for the first text of an answer."""
        self._first_visible.labels(platform).observe(seconds)

    def edit_sent(self, platform: str) -> None:
        """One message sent or edited on a platform."""
        self._edits.labels(platform).inc()

    def rate_limited(self, platform: str) -> None:
        """One 429 (or the platform's "slow down") met."""
        self._rate_limited.labels(platform).inc()

    def undelivered(self, platform: str) -> None:
        """An answer whose final text could not be delivered: must stay 0."""
        self._undelivered.labels(platform).inc()

    def platform_error(self, platform: str) -> None:
        """A send or edit failed on the platform's side or on the way to it."""
        self._platform_errors.labels(platform).inc()

    def observer(self, platform: str) -> PlatformObserver:
        """A reply stream's observer that counts into this platform's figures.

        The platform's failure counters exist from then on at 0, so an alert on them sees a series before the first
        failure (a rate over no series is no data, not 0).
        """
        for counter in (self._rate_limited, self._undelivered, self._platform_errors):
            counter.labels(platform)
        return PlatformObserver(self, platform)


class PlatformObserver:
    """Counts one platform's stream events into ChatMetrics (bot.reply.stream.StreamObserver)."""

    def __init__(self, metrics: ChatMetrics, platform: str) -> None:
        self._metrics = metrics
        self._platform = platform

    def first_visible(self, seconds: float) -> None:
        """See ChatMetrics.first_visible."""
        self._metrics.first_visible(self._platform, seconds)

    def edit_sent(self) -> None:
        """See ChatMetrics.edit_sent."""
        self._metrics.edit_sent(self._platform)

    def rate_limited(self) -> None:
        """See ChatMetrics.rate_limited."""
        self._metrics.rate_limited(self._platform)

    def undelivered(self) -> None:
        """See ChatMetrics.undelivered."""
        self._metrics.undelivered(self._platform)

    def platform_error(self) -> None:
        """See ChatMetrics.platform_error."""
        self._metrics.platform_error(self._platform)
