"""What a chat platform adds to ragbot's settings: a settings model of its own, and the helpers such models share.

A platform registers its model in the `ragbot.settings` entry-point group; bot.app.settings folds every registered
model into the one Settings class, so the environment and `.env` are read once, a typo is still refused, and
`.env.example` lists every variable. The core reads a platform's settings only through the hooks below.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from pydantic import BaseModel


@dataclass(frozen=True, slots=True)
class Advice:
    """Settings that start but leave a door shut an operator may not expect (`ragbot doctor` and start-up say it)."""

    setting: str
    problem: str
    fix: str


class PlatformSettings(BaseModel):
    """One platform's settings; field names are the environment variable names (TELEGRAM_BOT_TOKEN, ...)."""

    # The platform name its messages carry (IncomingMessage.key.platform).
    platform: ClassVar[str]

    @classmethod
    def of(cls, settings: Any) -> Self:
        """This platform's settings, read from ragbot's settings (which hold every platform's fields)."""
        return cls(**{name: getattr(settings, name) for name in cls.model_fields})

    def admins(self) -> frozenset[str]:
        """The user ids of this platform's admins (none unless the platform names them)."""
        return frozenset()

    def allowed_kbs(self, defaults: tuple[str, ...]) -> tuple[str, ...] | None:
        """The only knowledge bases this platform's chats may read, or None when any (`defaults`: the chats')."""
        return None

    def separate_tenants(self) -> bool:
        """Whether each workspace of this platform is a tenant of its own (installed by its own admins), not the
        operator's: it then reads only the knowledge bases it owns or the operator granted it."""
        return False

    def named_kbs(self) -> dict[str, tuple[str, ...]]:
        """The knowledge bases this platform's settings name, by setting (so start-up can say which are missing)."""
        return {}

    def advice(self) -> list[Advice]:
        """What an operator should hear about these settings though they work (none unless the platform says)."""
        return []

    def check(self, *, serving: bool, host: str) -> None:
        """Raise bot.errors.StartupError for settings that do not make sense together (`host`: RAGBOT_HOST)."""

    def webhooks(self) -> str | None:
        """The setting that has the internet post to this platform's routes (so ragbot is public), or None."""
        return None

    def check_public(self, reason: str) -> None:
        """Raise bot.errors.StartupError for settings unsafe while ragbot is public (`reason`: the setting why)."""


def names(value: str) -> tuple[str, ...]:
    """A comma-separated setting as its names, in order, stripped, without empties or repeats."""
    return tuple(dict.fromkeys(name.strip() for name in value.split(",") if name.strip()))


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def networks(value: str) -> tuple[Network, ...]:
    """Comma-separated addresses or CIDR networks (ValueError naming the first that is neither)."""
    return tuple(ipaddress.ip_network(part, strict=False) for part in names(value))


def is_loopback(host: str) -> bool:
    """Whether a listen address is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
