"""Drill: the public install pages. Anonymous visits to /slack/install leave a bounded number of OAuth states
(expired ones swept), and a callback with a forged, expired, reused or another browser's state installs nothing."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest
import pytest_asyncio
from sqlalchemy import func
from sqlmodel import select

from adapters.slack.app import BOT_SCOPES, INSTALL_PATH, REDIRECT_PATH
from fakes.slack import events
from storage.models import SlackInstallation, SlackOAuthState
from tests.conftest import EmbeddedSettings
from tests.e2e.test_slack import Slack
from tests.security.slack_support import slack_scene

CLIENT_ID = "111.222"
CLIENT_SECRET = "client-secret"
COOKIE = "slack-app-oauth-state"
# A bound well above the installs a team starts in ten minutes (adapters.slack.stores.STATE_LIMIT).
MOST_STATES = 100


@pytest_asyncio.fixture(scope="module")
async def slack(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[Slack]:
    data_dir = tmp_path_factory.mktemp("slack-oauth")
    async with slack_scene(
        data_dir, embedded_settings, {}, SLACK_CLIENT_ID=CLIENT_ID, SLACK_CLIENT_SECRET=CLIENT_SECRET
    ) as scene:
        yield scene


async def _states(slack: Slack) -> list[str]:
    async with slack.services.db.session() as session:
        return list((await session.exec(select(SlackOAuthState.state))).all())


async def _installed(slack: Slack, team: str) -> bool:
    async with slack.services.db.session() as session:
        found = await session.exec(
            select(func.count()).select_from(SlackInstallation).where(SlackInstallation.team_id == team)
        )
        return bool(found.one())


async def _begin(session: aiohttp.ClientSession, slack: Slack) -> str:
    """Open the install page as a browser would; the state Slack is sent with."""
    async with session.get(slack.url + INSTALL_PATH, allow_redirects=False) as page:
        assert page.status in (200, 302)
        found = re.search(r"state=([^&\"']+)", page.headers.get("Location") or await page.text())
        assert found is not None
        return found.group(1)


async def _callback(slack: Slack, code: str, state: str, cookie: str | None) -> int:
    headers = {"Cookie": f"{COOKIE}={cookie}"} if cookie is not None else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(slack.url + REDIRECT_PATH, params={"code": code, "state": state}, headers=headers) as done,
    ):
        return done.status


def _code(slack: Slack, code: str, team: str) -> None:
    slack.fake.register_oauth_code(
        code,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        team_id=team,
        team_name=team,
        installer_user_id=f"U{team}",
        bot_token=f"xoxb-{team.lower()}",
        bot_user_id=events.BOT_USER_ID,
        bot_id=f"B{team}",
        scope=",".join(BOT_SCOPES),
    )


async def test_anonymous_visits_to_the_install_page_leave_a_bounded_number_of_oauth_states(slack: Slack) -> None:
    abandoned = [f"abandoned-{n}" for n in range(20)]
    async with slack.services.db.session() as session:
        for state in abandoned:
            session.add(SlackOAuthState(state=state, expires_at=datetime.now(UTC) - timedelta(minutes=1)))
    gate = asyncio.Semaphore(10)

    async def visit(session: aiohttp.ClientSession) -> str:
        async with gate:
            return await _begin(session, slack)

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(visit(session) for _ in range(500)))
        kept = await _states(slack)
        assert len(kept) <= MOST_STATES
        assert not set(abandoned) & set(kept)
        # Whoever opens the page now can still install.
        _code(slack, "code-after-flood", "T0AFTER")
        state = await _begin(session, slack)
    assert await _callback(slack, "code-after-flood", state, state) == 200
    assert await _installed(slack, "T0AFTER")


async def test_a_callback_with_a_state_never_issued_installs_nothing(slack: Slack) -> None:
    _code(slack, "code-forged", "T0FORGED")
    assert await _callback(slack, "code-forged", "forged-state", "forged-state") >= 400
    assert not await _installed(slack, "T0FORGED")


async def test_a_callback_with_an_expired_state_installs_nothing(slack: Slack) -> None:
    async with slack.services.db.session() as session:
        session.add(SlackOAuthState(state="expired-state", expires_at=datetime.now(UTC) - timedelta(seconds=1)))
    _code(slack, "code-expired", "T0EXPIRED")
    assert await _callback(slack, "code-expired", "expired-state", "expired-state") >= 400
    assert not await _installed(slack, "T0EXPIRED")


async def test_a_callback_replaying_a_used_state_installs_nothing(slack: Slack) -> None:
    _code(slack, "code-first", "T0FIRST")
    _code(slack, "code-replayed", "T0REPLAYED")
    async with aiohttp.ClientSession() as session:
        state = await _begin(session, slack)
    assert await _callback(slack, "code-first", state, state) == 200
    assert await _callback(slack, "code-replayed", state, state) >= 400
    assert not await _installed(slack, "T0REPLAYED")


async def test_a_callback_without_the_browsers_state_cookie_installs_nothing(slack: Slack) -> None:
    _code(slack, "code-csrf", "T0CSRF")
    async with aiohttp.ClientSession() as session:
        state = await _begin(session, slack)  # the attacker's own state, sent to a victim's browser
    assert await _callback(slack, "code-csrf", state, None) >= 400
    assert not await _installed(slack, "T0CSRF")
