"""slack_sdk's installation and OAuth state stores over ragbot's own database, for multi-workspace installs.

One row holds one app's installation in one workspace (or org): slack_sdk's whole Installation as JSON, with
the bot's credentials beside it in columns. slack_sdk's SQLAlchemy stores keep a history of rows in two tables
(installations and bots) and read the newest; this store keeps the newest only, and reproduces what bolt can
observe of theirs. A bot stays findable when a later install brings no bot token, or when the installation is
deleted without it; a revoked bot leaves the installer's user token in place.
"""

from __future__ import annotations

import inspect
import logging
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from logging import Logger
from typing import Any, Final

from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.oauth.installation_store.models.installation import Installation
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore

from storage.records import SlackInstall, SlackInstallRecord
from storage.repos.slack_installs import SlackInstallRepo

log = logging.getLogger(__name__)

# Constructor arguments, less the relative expiries the constructor turns into the absolute `*_expires_at`:
# every one is also an attribute of that name, so `Installation(**stored)` rebuilds what was saved.
_INSTALLATION_FIELDS: Final = tuple(
    name for name in inspect.signature(Installation).parameters if not name.endswith("_expires_in")
)
_BOT_FIELDS: Final = tuple(name for name in inspect.signature(Bot).parameters if not name.endswith("_expires_in"))
_BOT_CREDENTIALS: Final = (
    "bot_token",
    "bot_id",
    "bot_user_id",
    "bot_scopes",
    "bot_refresh_token",
    "bot_token_expires_at",
)
# How long a workspace's installation, once read, answers bolt's lookup on every event from memory. Another
# instance's reinstall or revocation is seen after this; a revoked token is refused by Slack meanwhile anyway.
INSTALL_CACHE_SECONDS: Final = 10.0
# Bolt's OAuthSettings default (state_expiration_seconds=600).
_STATE_SECONDS: Final = 600
# Installs under way at once: far more than people installing in ten minutes, few enough rows for anonymous visits.
STATE_LIMIT: Final = 100


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple | list) else value


def _installation_json(installation: Installation) -> dict[str, Any]:
    """Every constructor argument as stored on the object: Unix timestamps stay numbers, custom values nested.

    Not `to_dict()`: it turns the timestamps into datetimes (which JSON cannot hold, and which round
    `installed_at` to microseconds) and spreads custom values over the top level.
    """
    data = {name: _json(getattr(installation, name)) for name in _INSTALLATION_FIELDS}
    data["custom_values"] = dict(installation.custom_values)
    return data


def _bot_installation(base: dict[str, Any], bot: Bot) -> Installation:
    """`base` (a stored installation, or none) with every field a Bot carries taken from `bot`.

    A stored `installed_at` stays: it names the install, and slack_sdk's token rotator hands back a copy
    whose `installed_at` went through a datetime (rounded to microseconds).
    """
    data = {"user_id": "", **base}
    for name in _BOT_FIELDS:
        if name != "installed_at" or name not in base:
            data[name] = _json(getattr(bot, name))
    data["custom_values"] = {**base.get("custom_values", {}), **bot.custom_values}
    return Installation(**data)


def _without(installation: Installation, names: tuple[str, ...]) -> Installation:
    data = _installation_json(installation)
    for name in names:
        data[name] = [] if name.endswith("_scopes") else None
    return Installation(**data)


def _key(enterprise_id: str | None, team_id: str | None, is_enterprise_install: bool | None = False) -> tuple[str, str]:
    """(enterprise, team) as stored: an org-wide install, or a lookup without a team, is keyed with team ""."""
    return enterprise_id or "", "" if is_enterprise_install else team_id or ""


class DatabaseInstallationStore(AsyncInstallationStore):
    """slack_sdk's AsyncInstallationStore for one app (`client_id`) over SlackInstallRepo."""

    def __init__(
        self,
        repo: SlackInstallRepo,
        client_id: str,
        *,
        logger: Logger | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._repo = repo
        self.client_id = client_id
        self._logger = logger or log
        self._clock = clock
        # Installations read lately, by (enterprise, team): bolt looks one up for every event it authorizes.
        self._read: dict[tuple[str, str], tuple[float, SlackInstallRecord | None]] = {}

    @property
    def logger(self) -> Logger:
        """The logger slack_sdk and bolt write this store's messages to."""
        return self._logger

    async def async_save(self, installation: Installation) -> None:
        """Store an installation, replacing the workspace's previous one; a bot it lacks is kept from that one."""
        if installation.bot_token is None:
            stored = await self._find(
                installation.enterprise_id, installation.team_id, installation.is_enterprise_install, fresh=True
            )
            if stored is not None and stored.bot_token:
                # slack_sdk would still find the earlier bot (its newest row with a token), and bolt use it.
                data = _installation_json(installation)
                data.update({name: stored.installation[name] for name in _BOT_CREDENTIALS})
                installation = Installation(**data)
        await self._save(installation)

    async def async_save_bot(self, bot: Bot) -> None:
        """Store a bot (a rotated token, say) into the workspace's installation, or on its own when there is none."""
        stored = await self._find(bot.enterprise_id, bot.team_id, bot.is_enterprise_install, fresh=True)
        await self._save(_bot_installation(stored.installation if stored is not None else {}, bot))

    async def async_find_bot(
        self, *, enterprise_id: str | None, team_id: str | None, is_enterprise_install: bool | None = False
    ) -> Bot | None:
        """The workspace's bot, or the org's when `is_enterprise_install`; None without a bot token."""
        stored = await self._find(enterprise_id, team_id, is_enterprise_install)
        if stored is None or not stored.bot_token:
            return None
        return Installation(**stored.installation).to_bot()

    async def async_find_installation(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None = None,
        is_enterprise_install: bool | None = False,
    ) -> Installation | None:
        """The workspace's (or org's) installation; with `user_id`, only if that user installed it.

        Another user gets None, as from slack_sdk's stores for a user who never installed: bolt then keeps the
        bot token it already has, and never sees the installer's user token in that user's requests.
        """
        stored = await self._find(enterprise_id, team_id, is_enterprise_install)
        if stored is None or not stored.installer_user_id:
            return None
        if user_id is not None and user_id != stored.installer_user_id:
            return None
        return Installation(**stored.installation)

    async def async_delete_bot(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        """Forget the bot's credentials; the installer's user token, if any, stays."""
        stored = await self._find(enterprise_id, team_id, fresh=True)
        if stored is None:
            return
        installation = Installation(**stored.installation)
        if stored.installer_user_id and installation.user_token:
            await self._save(_without(installation, _BOT_CREDENTIALS))
        else:
            await self._delete(stored)

    async def async_delete_installation(
        self, *, enterprise_id: str | None, team_id: str | None, user_id: str | None = None
    ) -> None:
        """Forget the installation (only if `user_id` installed it, when given); its bot, if any, stays."""
        stored = await self._find(enterprise_id, team_id, fresh=True)
        if stored is None or not stored.installer_user_id:
            return
        if user_id is not None and user_id != stored.installer_user_id:
            return
        if stored.bot_token:
            await self._save(_bot_installation({}, Installation(**stored.installation).to_bot()))
        else:
            await self._delete(stored)

    async def async_delete_all(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        """Forget everything about this app in the workspace (the app was uninstalled)."""
        stored = await self._find(enterprise_id, team_id, fresh=True)
        if stored is not None:
            await self._delete(stored)

    async def _find(
        self,
        enterprise_id: str | None,
        team_id: str | None,
        is_enterprise_install: bool | None = False,
        *,
        fresh: bool = False,
    ) -> SlackInstallRecord | None:
        """The stored installation; read lately is good enough for bolt's lookups, a change reads it `fresh`."""
        key = _key(enterprise_id, team_id, is_enterprise_install)
        cached = self._read.get(key)
        if not fresh and cached is not None and self._clock() - cached[0] < INSTALL_CACHE_SECONDS:
            return cached[1]
        stored = await self._repo.find(self.client_id, *key)
        if len(self._read) >= 10_000:  # workspaces gone quiet are read again when they speak
            self._read.clear()
        self._read[key] = (self._clock(), stored)
        return stored

    async def _save(self, installation: Installation) -> None:
        enterprise_id, team_id = _key(
            installation.enterprise_id, installation.team_id, installation.is_enterprise_install
        )
        self._read.pop((enterprise_id, team_id), None)
        await self._repo.save(
            SlackInstall(
                client_id=self.client_id,
                enterprise_id=enterprise_id,
                team_id=team_id,
                bot_token=installation.bot_token or "",
                bot_id=installation.bot_id or "",
                bot_user_id=installation.bot_user_id or "",
                bot_scopes=tuple(installation.bot_scopes or ()),
                installer_user_id=installation.user_id,
                is_enterprise_install=installation.is_enterprise_install,
                installation=_installation_json(installation),
            )
        )
        self._read.pop((enterprise_id, team_id), None)  # a lookup during the write may have cached the old one
        self._logger.info(
            "slack_install=saved enterprise=%s team=%s bot=%s installer=%s",
            enterprise_id,
            team_id,
            bool(installation.bot_token),
            installation.user_id,
        )

    async def _delete(self, stored: SlackInstallRecord) -> None:
        self._read.pop((stored.enterprise_id, stored.team_id), None)
        await self._repo.delete(stored.client_id, stored.enterprise_id, stored.team_id)
        self._read.pop((stored.enterprise_id, stored.team_id), None)
        self._logger.info("slack_install=deleted enterprise=%s team=%s", stored.enterprise_id, stored.team_id)


def _utcnow() -> datetime:
    return datetime.now(UTC)


class DatabaseOAuthStateStore(AsyncOAuthStateStore):
    """slack_sdk's AsyncOAuthStateStore over SlackInstallRepo: random states, each good once until it expires."""

    def __init__(
        self,
        repo: SlackInstallRepo,
        *,
        expiration_seconds: int = _STATE_SECONDS,
        limit: int = STATE_LIMIT,
        clock: Callable[[], datetime] = _utcnow,
        logger: Logger | None = None,
    ) -> None:
        self._repo = repo
        self.expiration_seconds = expiration_seconds
        self._limit = limit
        self._clock = clock
        self._logger = logger or log

    @property
    def logger(self) -> Logger:
        """The logger slack_sdk and bolt write this store's messages to."""
        return self._logger

    async def async_issue(self, *args: Any, **kwargs: Any) -> str:
        """A new state value (256 random bits), stored until it expires (expired and surplus ones are swept)."""
        state = secrets.token_urlsafe(32)
        now = self._clock()
        await self._repo.issue_state(
            state, now + timedelta(seconds=self.expiration_seconds), now=now, limit=self._limit
        )
        return state

    async def async_consume(self, state: str) -> bool:
        """Whether `state` was issued here and has not expired or been consumed; it cannot be used again."""
        consumed = await self._repo.consume_state(state, self._clock())
        if not consumed:
            self._logger.info("slack_oauth_state=refused")
        return consumed
