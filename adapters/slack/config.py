"""The Slack adapter's settings, as the adapter reads them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SlackConfig:
    """The Slack settings."""

    bot_token: str | None
    signing_secret: str | None
    app_token: str | None
    admins: frozenset[str]
    command: str
    native_streaming: bool
    base_url: str | None
    client_id: str | None
    client_secret: str | None
    redirect_url: str | None
    download_limit: int

    @property
    def oauth(self) -> bool:
        """Many workspaces, installed through /slack/install."""
        return self.client_id is not None and self.client_secret is not None
