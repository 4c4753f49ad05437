"""The web chat's settings (entry point `ragbot.settings`: web)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import SecretStr

from bot.errors import StartupError
from bot.settings_base import PlatformSettings, is_loopback, names


class WebSettings(PlatformSettings):
    """WEB_*: which knowledge bases the page reads, the admin token, and the access token a network needs."""

    platform: ClassVar[str] = "web"

    WEB_KNOWLEDGE_BASES: str = ""
    WEB_ADMIN_TOKEN: SecretStr | None = None
    WEB_ACCESS_TOKEN: SecretStr | None = None

    def allowed_kbs(self, defaults: tuple[str, ...]) -> tuple[str, ...] | None:
        """WEB_KNOWLEDGE_BASES, else the defaults: a page anyone can open reads nothing else."""
        return names(self.WEB_KNOWLEDGE_BASES) or defaults

    def named_kbs(self) -> dict[str, tuple[str, ...]]:
        """WEB_KNOWLEDGE_BASES, when set."""
        return {"WEB_KNOWLEDGE_BASES": names(self.WEB_KNOWLEDGE_BASES)} if self.WEB_KNOWLEDGE_BASES else {}

    def check(self, *, serving: bool, host: str) -> None:
        """Refuse to serve the chat to a network without an access token."""
        if serving and not is_loopback(host) and self.WEB_ACCESS_TOKEN is None:
            raise StartupError(
                "RAGBOT_HOST",
                f"{host} is reachable from the network and no WEB_ACCESS_TOKEN is set",
                "set WEB_ACCESS_TOKEN (people open /?access=TOKEN once), or serve on 127.0.0.1 behind your proxy",
            )
