"""Whether ragbot is public (reachable from the internet), decided by settings, never guessed from the bind address.

The recommended set-up is loopback behind a reverse proxy, so a loopback RAGBOT_HOST proves nothing: ragbot is
public when RAGBOT_PUBLIC says so, when it listens beyond loopback, when proxies are trusted (there is one), or
when any adapter takes webhooks (the internet must reach it for them to arrive).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.app.settings import Settings, is_loopback, platform_settings
from bot.settings_base import Network


@dataclass(frozen=True, slots=True)
class Exposure:
    """Public or local, the setting that made it public, and the proxies whose forwarding headers count."""

    public: bool
    reason: str
    trusted_proxies: tuple[Network, ...]


def exposure_of(settings: Settings) -> Exposure:
    """How `settings` expose ragbot: the first reason it is public, or local ("") when none holds."""
    proxies = settings.trusted_proxies()
    reasons = [
        "RAGBOT_PUBLIC=true" if settings.RAGBOT_PUBLIC else "",
        "" if is_loopback(settings.RAGBOT_HOST) else f"RAGBOT_HOST={settings.RAGBOT_HOST}",
        "RAGBOT_TRUSTED_PROXIES" if proxies else "",
        *(model.of(settings).webhooks() or "" for model in platform_settings()),
    ]
    reason = next((reason for reason in reasons if reason), "")
    return Exposure(public=bool(reason), reason=reason, trusted_proxies=proxies)
