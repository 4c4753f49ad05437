"""The Telegram adapter's settings (entry point `ragbot.settings`: telegram)."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import Field, SecretStr, field_validator

from adapters.telegram.access import Access
from bot.errors import StartupError
from bot.settings_base import Advice, PlatformSettings, names


class TelegramSettings(PlatformSettings):
    """TELEGRAM_*: the bot's token, its admins, long polling or a webhook, a self-hosted Bot API server."""

    platform: ClassVar[str] = "telegram"

    TELEGRAM_BOT_TOKEN: SecretStr | None = None
    TELEGRAM_ADMINS: str = ""
    TELEGRAM_ALLOWED_USERS: str = ""
    TELEGRAM_ALLOWED_CHATS: str = ""
    TELEGRAM_ALLOW_EVERYONE: bool = False
    TELEGRAM_MODE: Literal["polling", "webhook"] = "polling"
    TELEGRAM_WEBHOOK_URL: str | None = None
    TELEGRAM_WEBHOOK_SECRET: SecretStr | None = None
    TELEGRAM_API_BASE_URL: str | None = None
    TELEGRAM_FILE_BASE_URL: str | None = None
    TELEGRAM_DOWNLOAD_LIMIT_MB: float = Field(default=20.0, gt=0, le=100_000)

    @field_validator("TELEGRAM_ADMINS")
    @classmethod
    def _telegram_admins_are_ids(cls, value: str) -> str:
        bad = [name for name in names(value) if not name.lstrip("-").isdigit()]
        if bad:
            raise ValueError(f"must be numeric Telegram user ids (ask @userinfobot), not {', '.join(bad)}")
        return value

    @field_validator("TELEGRAM_ALLOWED_USERS")
    @classmethod
    def _allowed_users_are_ids(cls, value: str) -> str:
        bad = [name for name in names(value) if not name.isdigit()]
        if bad:
            raise ValueError(
                f"must be numeric Telegram user ids (the bot tells a stranger theirs; usernames can change hands), "
                f"not {', '.join(bad)}"
            )
        return value

    @field_validator("TELEGRAM_ALLOWED_CHATS")
    @classmethod
    def _allowed_chats_are_ids(cls, value: str) -> str:
        bad = [name for name in names(value) if not name.lstrip("-").isdigit()]
        if bad:
            raise ValueError(
                f"must be numeric Telegram chat ids (groups are negative, like -1001234567890; the bot tells a group "
                f"its id), not {', '.join(bad)}"
            )
        return value

    @field_validator("TELEGRAM_WEBHOOK_SECRET")
    @classmethod
    def _webhook_secret_charset(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", value.get_secret_value()):
            raise ValueError("must be 1-256 characters of A-Z, a-z, 0-9, _ and - (Telegram's rule)")
        return value

    def admins(self) -> frozenset[str]:
        """TELEGRAM_ADMINS as user ids (numbers: usernames can change hands)."""
        return frozenset(names(self.TELEGRAM_ADMINS))

    def webhooks(self) -> str | None:
        """Telegram posts to the webhook from the internet; polling reaches out instead."""
        if self.TELEGRAM_BOT_TOKEN is not None and self.TELEGRAM_MODE == "webhook":
            return "TELEGRAM_MODE=webhook"
        return None

    def access(self) -> Access:
        """Who may use the bot: the allowed users and the admins, the allowed chats, or everyone."""
        users = {int(user) for user in (*names(self.TELEGRAM_ALLOWED_USERS), *self.admins())}
        chats = {int(chat) for chat in names(self.TELEGRAM_ALLOWED_CHATS)}
        return Access(frozenset(users), frozenset(chats), everyone=self.TELEGRAM_ALLOW_EVERYONE)

    def advice(self) -> list[Advice]:
        """The bot is private by default: say so when no one but the admins (or no one at all) may use it."""
        if self.TELEGRAM_BOT_TOKEN is None or self.TELEGRAM_ALLOW_EVERYONE:
            return []
        if self.TELEGRAM_ALLOWED_USERS.strip() or self.TELEGRAM_ALLOWED_CHATS.strip():
            return []
        who = "only TELEGRAM_ADMINS" if self.admins() else "no one"
        return [
            Advice(
                "TELEGRAM_ALLOWED_USERS",
                f"{who} may use the Telegram bot: everyone else is told it is private, with their id",
                "list user ids in TELEGRAM_ALLOWED_USERS and group chat ids in TELEGRAM_ALLOWED_CHATS "
                "(or set TELEGRAM_ALLOW_EVERYONE=true for a public bot)",
            )
        ]

    def check(self, *, serving: bool, host: str) -> None:
        """A webhook needs its public URL and a secret."""
        if self.TELEGRAM_BOT_TOKEN is None or self.TELEGRAM_MODE != "webhook":
            return
        if not self.TELEGRAM_WEBHOOK_URL:
            raise StartupError(
                "TELEGRAM_WEBHOOK_URL",
                "not set while TELEGRAM_MODE=webhook",
                "set the public HTTPS URL, or use polling",
            )
        if self.TELEGRAM_WEBHOOK_SECRET is None:
            raise StartupError(
                "TELEGRAM_WEBHOOK_SECRET",
                "not set while TELEGRAM_MODE=webhook",
                "set a secret so forged deliveries are refused",
            )
