"""The chat figures for /metrics: turns per platform and outcome, time to first visible text, edits, 429s."""

from __future__ import annotations

from collections import Counter

from bot.metrics import Histogram

# Time to first visible text and turn length: from a fast FAQ answer (~50 ms) to a slow model (~a minute).
BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 60.0)


class ChatMetrics:
    """Counters and histograms of the chat side; also the StreamObserver of every reply stream."""

    def __init__(self) -> None:
        self._turns: Counter[tuple[str, str]] = Counter()
        self._edits: Counter[str] = Counter()
        self._rate_limited: Counter[str] = Counter()
        self._undelivered: Counter[str] = Counter()
        self._first_visible: dict[str, Histogram] = {}
        self._turn_seconds: dict[str, Histogram] = {}

    def turn(self, platform: str, outcome: str, seconds: float) -> None:
        """Count one finished turn."""
        self._turns[platform, outcome or "unknown"] += 1
        self._turn_seconds.setdefault(platform, Histogram(BUCKETS)).add(seconds)

    def first_visible(self, platform: str, seconds: float) -> None:
        """How long a person waited for the first text of an answer."""
        self._first_visible.setdefault(platform, Histogram(BUCKETS)).add(seconds)

    def edit_sent(self, platform: str) -> None:
        """One message sent or edited on a platform."""
        self._edits[platform] += 1

    def rate_limited(self, platform: str) -> None:
        """One 429 (or the platform's "slow down") met."""
        self._rate_limited[platform] += 1

    def undelivered(self, platform: str) -> None:
        """An answer whose final text could not be delivered: must stay 0."""
        self._undelivered[platform] += 1

    def observer(self, platform: str) -> PlatformObserver:
        """A reply stream's observer that counts into this platform's figures."""
        return PlatformObserver(self, platform)

    def render(self) -> list[str]:
        """Prometheus text lines."""
        lines = ["# TYPE ragbot_chat_turns_total counter"]
        lines += [
            f'ragbot_chat_turns_total{{platform="{p}",outcome="{o}"}} {n}' for (p, o), n in sorted(self._turns.items())
        ]
        for name, counter in (
            ("ragbot_chat_edits_total", self._edits),
            ("ragbot_chat_rate_limited_total", self._rate_limited),
            ("ragbot_chat_undelivered_total", self._undelivered),
        ):
            lines.append(f"# TYPE {name} counter")
            lines += [f'{name}{{platform="{p}"}} {n}' for p, n in sorted(counter.items())]
        for name, histograms in (
            ("ragbot_chat_first_visible_seconds", self._first_visible),
            ("ragbot_chat_turn_seconds", self._turn_seconds),
        ):
            lines.append(f"# TYPE {name} histogram")
            for platform, histogram in sorted(histograms.items()):
                lines += histogram.render(name, f'platform="{platform}"')
        return lines


class PlatformObserver:
    """Counts one platform's stream events into ChatMetrics (bot.streaming.StreamObserver)."""

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
