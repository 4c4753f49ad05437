"""The web chat's settings (entry point `ragbot.settings`: web)."""

from __future__ import annotations

from typing import ClassVar, Final

from pydantic import Field, SecretStr

from bot.errors import StartupError
from bot.settings_base import PlatformSettings, names

# A random token of 32 characters (~190 bits in URL-safe base64) is beyond guessing even without the login
# throttle; a short one typed by hand is not.
MIN_TOKEN_LENGTH: Final = 32


class WebSettings(PlatformSettings):
    """WEB_*: which knowledge bases the page reads, the admin and access tokens, and the per-address limit."""

    platform: ClassVar[str] = "web"

    WEB_KNOWLEDGE_BASES: str = ""
    WEB_ADMIN_TOKEN: SecretStr | None = None
    WEB_ACCESS_TOKEN: SecretStr | None = None
    WEB_ADDRESS_RATE_LIMIT: int = Field(default=120, ge=1, le=100_000)

    def allowed_kbs(self, defaults: tuple[str, ...]) -> tuple[str, ...] | None:
        """WEB_KNOWLEDGE_BASES, else the defaults: a page anyone can open reads nothing else."""
        return names(self.WEB_KNOWLEDGE_BASES) or defaults

    def named_kbs(self) -> dict[str, tuple[str, ...]]:
        """WEB_KNOWLEDGE_BASES, when set."""
        return {"WEB_KNOWLEDGE_BASES": names(self.WEB_KNOWLEDGE_BASES)} if self.WEB_KNOWLEDGE_BASES else {}

    def check(self, *, serving: bool, host: str) -> None:
        """Refuse tokens short enough to guess."""
        for name in ("WEB_ADMIN_TOKEN", "WEB_ACCESS_TOKEN"):
            token: SecretStr | None = getattr(self, name)
            if token is not None and len(token.get_secret_value()) < MIN_TOKEN_LENGTH:
                raise StartupError(
                    name,
                    f"is shorter than {MIN_TOKEN_LENGTH} characters, short enough to guess",
                    "set a random one, e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`",
                )

    def check_public(self, reason: str) -> None:
        """Refuse to serve the chat to the internet without an access token."""
        if self.WEB_ACCESS_TOKEN is None:
            raise StartupError(
                "WEB_ACCESS_TOKEN",
                f"not set while ragbot is public ({reason}), so anyone could open the web chat",
                "set WEB_ACCESS_TOKEN (people open /?access=TOKEN once)",
            )
