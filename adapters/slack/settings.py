"""The Slack adapter's settings (entry point `ragbot.settings`: slack)."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import SecretStr, field_validator

from bot.errors import StartupError
from bot.settings_base import PlatformSettings, names


class SlackSettings(PlatformSettings):
    """SLACK_*: one workspace's tokens, or an app installed in many; admins, the slash command, streaming."""

    platform: ClassVar[str] = "slack"

    SLACK_BOT_TOKEN: SecretStr | None = None
    SLACK_SIGNING_SECRET: SecretStr | None = None
    SLACK_APP_TOKEN: SecretStr | None = None
    SLACK_ADMINS: str = ""
    SLACK_COMMAND: str = "/kb"
    SLACK_STREAMING: Literal["native", "edit"] = "native"
    SLACK_API_BASE_URL: str | None = None
    SLACK_CLIENT_ID: str | None = None
    SLACK_CLIENT_SECRET: SecretStr | None = None
    SLACK_REDIRECT_URL: str | None = None

    @field_validator("SLACK_ADMINS")
    @classmethod
    def _slack_admins_are_ids(cls, value: str) -> str:
        bad = [name for name in names(value) if not re.fullmatch(r"[UW][A-Z0-9]{2,}", name)]
        if bad:
            raise ValueError(
                f"must be Slack member ids like U012ABCDEF (profile → ⋮ → Copy member ID), not {', '.join(bad)}"
            )
        return value

    @field_validator("SLACK_COMMAND")
    @classmethod
    def _slack_command_shape(cls, value: str) -> str:
        if not re.fullmatch(r"/[a-z0-9_\-]{1,31}", value):
            raise ValueError("must be a slash command like /kb (lower case letters, digits, - and _)")
        return value

    @property
    def oauth(self) -> bool:
        """Installed in many workspaces through /slack/install."""
        return self.SLACK_CLIENT_ID is not None and self.SLACK_CLIENT_SECRET is not None

    def separate_tenants(self) -> bool:
        """Installed through OAuth, each workspace is a tenant: its installer administers only its own."""
        return self.oauth

    def admins(self) -> frozenset[str]:
        """SLACK_ADMINS as member ids."""
        return frozenset(names(self.SLACK_ADMINS))

    def webhooks(self) -> str | None:
        """The install pages and the Events API over HTTP are posted to from the internet; Socket Mode is not."""
        if self.oauth:
            return "SLACK_CLIENT_ID"
        if self.SLACK_BOT_TOKEN is not None and self.SLACK_APP_TOKEN is None:
            return "SLACK_BOT_TOKEN without SLACK_APP_TOKEN"
        return None

    def check(self, *, serving: bool, host: str) -> None:
        """The Slack settings that only make sense together."""
        oauth = self.SLACK_CLIENT_ID is not None or self.SLACK_CLIENT_SECRET is not None
        if oauth and (self.SLACK_CLIENT_ID is None or self.SLACK_CLIENT_SECRET is None):
            missing = "SLACK_CLIENT_SECRET" if self.SLACK_CLIENT_SECRET is None else "SLACK_CLIENT_ID"
            raise StartupError(missing, "not set while the other OAuth setting is", "set both, or neither")
        if not (oauth or self.SLACK_BOT_TOKEN is not None):
            if self.SLACK_APP_TOKEN is not None:
                raise StartupError(
                    "SLACK_BOT_TOKEN", "not set while SLACK_APP_TOKEN is", "set the bot token (xoxb-…) as well"
                )
            return
        if self.SLACK_APP_TOKEN is None and self.SLACK_SIGNING_SECRET is None:
            raise StartupError(
                "SLACK_SIGNING_SECRET",
                "not set, so requests posted to /slack/events cannot be verified",
                "copy it from the app's Basic Information page, or set SLACK_APP_TOKEN to use Socket Mode",
            )
        if oauth and self.SLACK_SIGNING_SECRET is None:
            raise StartupError(
                "SLACK_SIGNING_SECRET", "not set while SLACK_CLIENT_ID is", "the install pages need it: set it"
            )
