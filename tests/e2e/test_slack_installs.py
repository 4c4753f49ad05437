"""Many Slack workspaces: a second one installed through ragbot's OAuth pages answers from its own bindings only,
its installer is its admin, and once uninstalled its events are dropped harmlessly."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio

from adapters.slack.app import BOT_SCOPES, INSTALL_PATH, REDIRECT_PATH, SlackAdapter
from adapters.slack.app import create as create_slack
from bot.app.manager import build_manager, chat_policy
from bot.app.services import build_services
from bot.words import messages
from fakes.slack import FakeSlackAPI, events
from rag.ingest.documents import SourceFile
from storage.repos.slack_installs import SlackInstallRepo
from storage.secret_box import KeyRing, SecretBox
from tests.conftest import EmbeddedSettings
from tests.e2e.test_slack import HANDBOOK, SECRET, Slack, _serve

CLIENT_ID = "111.222"
CLIENT_SECRET = "client-secret"
ACME, ACME_TOKEN = "T0ACME", "xoxb-acme"
BETA, BETA_TOKEN, BETA_ADMIN = "T0BETA", "xoxb-beta", "U0BETAADMIN"
GARDEN = b"# Greenhouse\n\nThe greenhouse opens at seven in the morning and closes at dusk.\n"


@pytest_asyncio.fixture(scope="module")
async def slack(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[Slack]:
    async with FakeSlackAPI() as fake:
        fake.add_workspace(ACME, bot_token=ACME_TOKEN, bot_user_id=events.BOT_USER_ID, bot_id="B0ACME")
        settings = embedded_settings(
            tmp_path_factory.mktemp("slack-installs"),
            DEFAULT_KNOWLEDGE_BASES="handbook",
            SLACK_BOT_TOKEN=ACME_TOKEN,
            SLACK_SIGNING_SECRET=SECRET,
            SLACK_CLIENT_ID=CLIENT_ID,
            SLACK_CLIENT_SECRET=CLIENT_SECRET,
            SLACK_API_BASE_URL=fake.base_url,
        )
        async with build_services(settings) as services:
            handbook = await services.knowledge.create("handbook", {})
            await services.ingestor.ingest(handbook, SourceFile(HANDBOOK, "upload:handbook.md", "handbook.md"))
            garden = await services.knowledge.create("garden", {})
            await services.ingestor.ingest(garden, SourceFile(GARDEN, "upload:garden.md", "garden.md"))
            # Installed through OAuth, every workspace is a tenant: it reads the operator's handbook once granted.
            await services.knowledge.grant("handbook", f"slack:{ACME}")
            manager = build_manager(services, chat_policy(settings))
            adapter = create_slack(manager, settings, services.db)
            assert isinstance(adapter, SlackAdapter)
            runner, url = await _serve(adapter)
            await adapter.start()
            try:
                yield Slack(services, fake, adapter, url, manager, settings)
            finally:
                await adapter.stop()
                await runner.cleanup()


def _installs(slack: Slack) -> SlackInstallRepo:
    return SlackInstallRepo(slack.services.db, box=SecretBox(KeyRing.in_dir(slack.settings.data_dir)))


async def _install(slack: Slack, code: str) -> int:
    """Open /slack/install, follow Slack's redirect back with the code; the callback page's status."""
    async with aiohttp.ClientSession() as session:
        async with session.get(slack.url + INSTALL_PATH, allow_redirects=False) as page:
            assert page.status in (200, 302)
            cookie = page.headers["Set-Cookie"].split(";")[0]
            authorize = page.headers.get("Location") or await page.text()
            state = re.search(r"state=([^&\"']+)", authorize)
            assert state is not None
        query = {"code": code, "state": state.group(1)}
        async with session.get(slack.url + REDIRECT_PATH, params=query, headers={"Cookie": cookie}) as done:
            return done.status


async def _command(slack: Slack, team: str, user: str, channel: str, text: str) -> str:
    hook = slack.fake.response_url(team_id=team, channel=channel, user=user)
    fields = events.slash_command(
        command="/kb", text=text, user_id=user, channel_id=channel, team_id=team, response_url=hook
    )
    assert (await slack.post(fields, form=True))[0] == 200
    await slack.fake.wait_for(lambda: slack.fake.responses(hook), timeout=30)
    return str(slack.fake.responses(hook)[-1].body["blocks"][0]["text"])


async def _ask(slack: Slack, team: str, channel: str, text: str) -> str:
    ts = slack.fake.user_message(team, channel, "U0SOMEONE", f"<@{events.BOT_USER_ID}> {text}")
    event = events.app_mention(channel=channel, user="U0SOMEONE", text=text, team=team, ts=ts)
    assert (await slack.post(events.envelope(event, team_id=team)))[0] == 200
    (shown,) = await slack.answers(channel, ts)
    return shown


async def test_a_second_workspace_installs_and_answers_from_its_own_bindings(slack: Slack) -> None:
    slack.fake.register_oauth_code(
        "code-beta",
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        team_id=BETA,
        team_name="Beta",
        installer_user_id=BETA_ADMIN,
        bot_token=BETA_TOKEN,
        bot_user_id=events.BOT_USER_ID,
        bot_id="B0BETA",
        scope=",".join(BOT_SCOPES),
    )
    assert await _install(slack, "code-beta") == 200
    installed = await _installs(slack).find(CLIENT_ID, "", BETA)
    assert installed is not None
    assert (installed.bot_token, installed.installer_user_id) == (BETA_TOKEN, BETA_ADMIN)
    # The installer is an admin in the new workspace without being listed in SLACK_ADMINS; others are not.
    refused = await _command(slack, BETA, "U0BETAUSER", "C0BETA", "use garden")
    assert refused == messages.admins_only("kb use", "en")
    # The operator's garden is not the new workspace's to name until the operator grants it.
    unknown = await _command(slack, BETA, BETA_ADMIN, "C0BETA", "use garden")
    assert unknown == messages.kb_use_missing("garden", [], "en", create=True)
    assert await slack.services.knowledge.grant("garden", f"slack:{BETA}")
    assert await _command(slack, BETA, BETA_ADMIN, "C0BETA", "use garden") == messages.kb_now_using("garden", "en")
    assert await slack.services.bindings.kb_ids("slack", BETA, "C0BETA") == [
        (await slack.services.knowledge.named("garden")).id  # type: ignore[union-attr]
    ]
    shown = await _ask(slack, BETA, "C0BETA", "When does the greenhouse open?")
    assert "seven in the morning" in shown
    assert shown.endswith("*Sources:* [1] garden.md")
    lunch_in_beta = await _ask(slack, BETA, "C0BETA", "When is lunch served?")
    assert "handbook.md" not in lunch_in_beta
    lunch_in_acme = await _ask(slack, ACME, "C0ACME", "When is lunch served?")
    assert lunch_in_acme.endswith("*Sources:* [1] handbook.md")
    assert all(call.team_id == BETA for call in slack.fake.calls("chat.postMessage") if "C0BETA" in str(call.params))


async def test_an_uninstalled_workspaces_events_are_dropped_harmlessly(slack: Slack) -> None:
    slack.fake.register_oauth_code(
        "code-gamma",
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        team_id="T0GAMMA",
        team_name="Gamma",
        installer_user_id="U0GAMMA",
        bot_token="xoxb-gamma",
        bot_user_id=events.BOT_USER_ID,
        bot_id="B0GAMMA",
        scope=",".join(BOT_SCOPES),
    )
    assert await _install(slack, "code-gamma") == 200
    slack.fake.uninstall("T0GAMMA")
    assert (await slack.post(events.app_uninstalled(team_id="T0GAMMA")))[0] == 200

    async def removed() -> None:
        while True:
            if await _installs(slack).find(CLIENT_ID, "", "T0GAMMA") is None:
                return
            await asyncio.sleep(0.05)

    await asyncio.wait_for(removed(), 10)
    ts = slack.fake.user_message("T0GAMMA", "C0GAMMA", "U0SOMEONE", "hello?")
    event = events.app_mention(channel="C0GAMMA", user="U0SOMEONE", text="hello?", team="T0GAMMA", ts=ts)
    status, _ = await slack.post(events.envelope(event, team_id="T0GAMMA"))
    assert status < 500
    # The service still answers elsewhere, and nothing was posted for the uninstalled workspace.
    assert "handbook.md" in await _ask(slack, ACME, "C0ACME2", "When is lunch served?")
    assert slack.bot_replies("C0GAMMA", ts) == []
