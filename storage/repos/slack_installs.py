"""Slack installations, one per app and workspace (or org), and the OAuth state values of installs under way.

Tokens are sealed (storage.secret_box) in the bot_token column and in the installation's JSON; a row written
before sealing is read as it is and sealed when it is next saved, or by `reseal_all`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

from sqlalchemy import delete, func, or_
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.sql.expression import SelectOfScalar

from storage.db import Database
from storage.models import SlackInstallation, SlackOAuthState, utcnow
from storage.records import SlackInstall, SlackInstallRecord
from storage.secret_box import SecretBox

# The installation's values that let their holder act in the workspace: tokens, and the webhook's URL.
SECRET_FIELDS: Final = ("bot_token", "bot_refresh_token", "user_token", "user_refresh_token", "incoming_webhook_url")


def _each_secret(installation: Mapping[str, Any], change: Callable[[str], str]) -> dict[str, Any]:
    return {
        name: change(value) if name in SECRET_FIELDS and isinstance(value, str) else value
        for name, value in installation.items()
    }


def _record(row: SlackInstallation, box: SecretBox) -> SlackInstallRecord:
    return SlackInstallRecord(
        client_id=row.client_id,
        enterprise_id=row.enterprise_id,
        team_id=row.team_id,
        bot_token=box.open(row.bot_token),
        bot_id=row.bot_id,
        bot_user_id=row.bot_user_id,
        bot_scopes=tuple(scope for scope in row.bot_scopes.split(",") if scope),
        installer_user_id=row.installer_user_id,
        is_enterprise_install=row.is_enterprise_install,
        installation=_each_secret(row.installation, box.open),
        installed_at=row.installed_at,
        updated_at=row.updated_at,
    )


def _by_key(client_id: str, enterprise_id: str, team_id: str) -> SelectOfScalar[SlackInstallation]:
    return select(SlackInstallation).where(
        SlackInstallation.client_id == client_id,
        SlackInstallation.enterprise_id == enterprise_id,
        SlackInstallation.team_id == team_id,
    )


class SlackInstallRepo:
    """The slack_installation and slack_oauth_state tables; "" stands for an absent enterprise or team."""

    def __init__(self, db: Database, *, box: SecretBox, clock: Callable[[], datetime] = utcnow) -> None:
        self._db = db
        self._box = box
        self._clock = clock

    async def save(self, install: SlackInstall) -> SlackInstallRecord:
        """Store `install`, replacing the one under the same key but keeping its `installed_at`.

        An org-wide install is keyed by its enterprise with team "", whatever team it names, so that it is
        found the way slack_sdk looks it up. Safe when two saves race to create the row.
        """
        team_id = "" if install.is_enterprise_install else install.team_id
        for _attempt in range(2):
            try:
                async with self._db.session() as session:
                    now = self._clock()
                    row = (await session.exec(_by_key(install.client_id, install.enterprise_id, team_id))).first()
                    if row is None:
                        row = SlackInstallation(
                            client_id=install.client_id,
                            enterprise_id=install.enterprise_id,
                            team_id=team_id,
                            installed_at=now,
                        )
                    row.bot_token = self._box.seal(install.bot_token)
                    row.bot_id = install.bot_id
                    row.bot_user_id = install.bot_user_id
                    row.bot_scopes = ",".join(install.bot_scopes)
                    row.installer_user_id = install.installer_user_id
                    row.is_enterprise_install = install.is_enterprise_install
                    row.installation = _each_secret(install.installation, self._box.seal)
                    row.updated_at = now
                    session.add(row)
                return _record(row, self._box)
            except IntegrityError:
                continue  # created by the other writer between our read and write: replace theirs
        raise RuntimeError("slack_installation row could neither be created nor found")

    async def find(self, client_id: str, enterprise_id: str, team_id: str) -> SlackInstallRecord | None:
        """The installation stored under exactly this key; an org-wide one has team ""."""
        async with self._db.session() as session:
            row = (await session.exec(_by_key(client_id, enterprise_id, team_id))).first()
        return None if row is None else _record(row, self._box)

    async def delete(self, client_id: str, enterprise_id: str, team_id: str) -> bool:
        """Remove the installation under this key; whether there was one."""
        statement = delete(SlackInstallation).where(
            col(SlackInstallation.client_id) == client_id,
            col(SlackInstallation.enterprise_id) == enterprise_id,
            col(SlackInstallation.team_id) == team_id,
        )
        async with self._db.session() as session:
            result = await session.exec(statement)
        return bool(result.rowcount)

    async def delete_all(self, enterprise_id: str, team_id: str) -> int:
        """Remove every app's installation in this workspace or org; how many there were."""
        statement = delete(SlackInstallation).where(
            col(SlackInstallation.enterprise_id) == enterprise_id, col(SlackInstallation.team_id) == team_id
        )
        async with self._db.session() as session:
            result = await session.exec(statement)
        return int(result.rowcount)

    async def list_workspaces(self, client_id: str | None = None) -> list[SlackInstallRecord]:
        """Every stored installation (of one app when `client_id` is given), by enterprise, team and app."""
        statement = select(SlackInstallation).order_by(
            col(SlackInstallation.enterprise_id), col(SlackInstallation.team_id), col(SlackInstallation.client_id)
        )
        if client_id is not None:
            statement = statement.where(SlackInstallation.client_id == client_id)
        async with self._db.session() as session:
            rows = (await session.exec(statement)).all()
        return [_record(row, self._box) for row in rows]

    async def reseal_all(self) -> int:
        """Seal every stored token with the newest key (plain ones from before sealing too); how many rows."""
        async with self._db.session() as session:
            rows = (await session.exec(select(SlackInstallation))).all()
            for row in rows:
                row.bot_token = self._box.reseal(row.bot_token)
                row.installation = _each_secret(row.installation, self._box.reseal)
                session.add(row)
        return len(rows)

    async def issue_state(self, state: str, expires_at: datetime, *, now: datetime, limit: int) -> None:
        """Remember an OAuth state value until `expires_at`, with at most `limit` states kept in all.

        Anyone may open the install page, and each visit issues a state: the ones expired at `now` go here, and
        past `limit` the oldest go too (an install begun longer ago than `limit` newer ones then fails, and is
        begun again), so the table stays small however many visits come.
        """
        newest = select(SlackOAuthState.state).order_by(col(SlackOAuthState.expires_at).desc()).limit(limit)
        async with self._db.session() as session:
            await session.exec(delete(SlackOAuthState).where(col(SlackOAuthState.expires_at) <= now))
            session.add(SlackOAuthState(state=state, expires_at=expires_at))
            await session.flush()
            await session.exec(delete(SlackOAuthState).where(col(SlackOAuthState.state).not_in(newest)))

    async def count_states(self) -> int:
        """How many OAuth states are kept (live or not yet swept)."""
        async with self._db.session() as session:
            return int((await session.exec(select(func.count()).select_from(SlackOAuthState))).one())

    async def consume_state(self, state: str, now: datetime) -> bool:
        """True once for a state issued and not yet expired at `now`; the state is gone afterwards either way.

        States of abandoned installs are swept here too, so the table holds only live ones. The first DELETE
        decides: of two concurrent consumes of one state, only one removes its row.
        """
        live = delete(SlackOAuthState).where(col(SlackOAuthState.state) == state, col(SlackOAuthState.expires_at) > now)
        stale = delete(SlackOAuthState).where(
            or_(col(SlackOAuthState.state) == state, col(SlackOAuthState.expires_at) <= now)
        )
        async with self._db.session() as session:
            consumed = (await session.exec(live)).rowcount == 1
            await session.exec(stale)
        return consumed
