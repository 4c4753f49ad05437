"""A person who is no admin tries every admin command, in every form, and every form only admins may run, on every
platform (the web chat, Telegram privately and in a group, Slack in a DM and a channel): each is refused with the
admins-only line and changes nothing. The cases come from the command registry, so a new admin command or form is
drilled without a word here (an admin-only form of a command anyone may run needs its arguments in
commands_support._WORDS)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from adapters.slack.translate import command_style
from adapters.telegram.render import to_telegram_html
from bot.app.services import Services, build_services
from bot.commands.registry import Asker
from bot.types import SLASH_COMMANDS
from bot.words import messages
from fakes.slack import FakeSlackAPI, events
from fakes.telegram import parse_html
from tests.conftest import EmbeddedSettings
from tests.security.commands_support import (
    SLACK_TEAM,
    AdminCase,
    SlackApp,
    admin_cases,
    fake_slack,
    seed,
    seed_more,
    slack_app,
    slack_settings,
    state,
    web_chat,
    web_command,
    web_session,
)
from tests.security.telegram_support import TelegramBot, person, telegram_bot

SLACK_STYLE = command_style("/kb")
# Telegram lets a bot post 20 messages a minute in one group (the fake enforces it, and ragbot's pacer waits): the
# group cases are spread over groups of GROUP_CASES each, so each refusal is shown within the wait.
TEAM_GROUPS = (-100301, -100302, -100303)
GROUP_CASES = 15
MALLORY = person(7501, "Mallory")  # a member of the team: allowed to use the bot, not to administer it
MALLORY_IN_GROUP = person(7502, "Mallory")
SLACK_MALLORY = "U0MALLORY"


def _cases(private: bool, *, kb_limited: bool = False, style: Any = SLASH_COMMANDS) -> list[AdminCase]:
    return admin_cases(Asker(True, private, kb_limited, style), Asker(False, private, kb_limited, style))


def _refused(reply: str, case: AdminCase, style: Any = SLASH_COMMANDS, shown: Any = str) -> bool:
    return reply in {shown(messages.admins_only(name, "en", style)) for name in case.refusals}


def _telegram_plain(markdown: str) -> str:
    return parse_html(to_telegram_html(markdown))[0]


# --- The web chat --------------------------------------------------------------------------------------------------


@dataclass
class Web:
    services: Services
    browser: aiohttp.ClientSession
    faq: str


@pytest_asyncio.fixture(scope="module")
async def web(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[Web]:
    async with (
        web_chat(tmp_path_factory.mktemp("web-admin-drill"), embedded_settings) as (services, url, faq),
        web_session(url) as browser,
    ):
        yield Web(services, browser, faq)


@pytest.mark.parametrize("case", _cases(True, kb_limited=True), ids=str)
async def test_a_web_visitor_who_is_no_admin_cannot_run_an_admin_command(web: Web, case: AdminCase) -> None:
    before = await state(web.services)
    reply = await web_command(web.browser, "/" + case.words.format(faq=web.faq))
    assert _refused(reply, case), reply
    assert await state(web.services) == before


# --- Telegram ------------------------------------------------------------------------------------------------------


@dataclass
class Telegram:
    bot: TelegramBot
    faq: str


@pytest_asyncio.fixture(scope="module")
async def telegram(
    tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings
) -> AsyncIterator[Telegram]:
    async with telegram_bot(
        tmp_path_factory.mktemp("telegram-admin-drill"),
        embedded_settings,
        TELEGRAM_ALLOWED_USERS=f"{MALLORY['id']},{MALLORY_IN_GROUP['id']}",
        TELEGRAM_ALLOWED_CHATS=",".join(map(str, TEAM_GROUPS)),
    ) as bot:
        yield Telegram(bot, await seed_more(bot.services))


async def _telegram_try(telegram: Telegram, case: AdminCase, *, chat_id: int, user: dict[str, Any]) -> None:
    fake, services = telegram.bot.fake, telegram.bot.services
    before, shown = await state(services), len(fake.visible(chat_id))
    text = "/" + case.words.format(faq=telegram.faq)
    group = chat_id < 0
    if case.files:
        file_id = fake.add_file(b"# Secret\n\nnothing", "secret.md", "text/markdown")
        fake.queue_update(fake.document_message(file_id, caption=text, chat_id=chat_id if group else None, user=user))
    elif group:
        fake.queue_update(fake.group_message(text, chat_id=chat_id, user=user, mention=False))
    else:
        fake.queue_update(fake.private_message(text, user=user))
    await fake.wait_for(lambda: len(fake.visible(chat_id)) == shown + 1, timeout=30)
    reply = fake.visible(chat_id)[-1]
    assert _refused(reply, case, shown=_telegram_plain), reply
    assert await state(services) == before
    assert fake.calls("getFile") == []  # a refused file is not even downloaded


@pytest.mark.parametrize("case", _cases(True), ids=str)
async def test_a_telegram_member_who_is_no_admin_cannot_run_an_admin_command_privately(
    telegram: Telegram, case: AdminCase
) -> None:
    await _telegram_try(telegram, case, chat_id=MALLORY["id"], user=MALLORY)


def _group_cases() -> list[Any]:
    cases = _cases(False)
    assert len(cases) <= GROUP_CASES * len(TEAM_GROUPS), "more admin commands than the groups can be shown: add one"
    return [pytest.param(case, TEAM_GROUPS[n // GROUP_CASES], id=str(case)) for n, case in enumerate(cases)]


@pytest.mark.parametrize(("case", "group"), _group_cases())
async def test_a_telegram_member_who_is_no_admin_cannot_run_an_admin_command_in_a_group(
    telegram: Telegram, case: AdminCase, group: int
) -> None:
    await _telegram_try(telegram, case, chat_id=group, user=MALLORY_IN_GROUP)


# --- Slack ---------------------------------------------------------------------------------------------------------


@dataclass
class Slack:
    services: Services
    fake: FakeSlackAPI
    app: SlackApp
    faq: str


@pytest_asyncio.fixture(scope="module")
async def slack(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[Slack]:
    async with fake_slack() as fake:
        settings = slack_settings(tmp_path_factory.mktemp("slack-admin-drill"), fake, embedded_settings)
        async with build_services(settings) as services:
            faq = await seed(services)
            await services.jobs.start()
            try:
                async with slack_app(services, settings, fake) as app:
                    yield Slack(services, fake, app, faq)
            finally:
                await services.jobs.stop()


async def _slack_try(slack: Slack, case: AdminCase, *, channel: str, user: str) -> None:
    before = await state(slack.services)
    written = SLACK_STYLE.written(case.words.format(faq=slack.faq))
    hook = slack.fake.response_url(team_id=SLACK_TEAM, channel=channel, user=user)
    fields = events.slash_command(
        command="/kb",
        text=written.removeprefix("/kb").strip(),
        user_id=user,
        channel_id=channel,
        team_id=SLACK_TEAM,
        response_url=hook,
    )
    assert await slack.app.post(fields, form=True) == 200
    await slack.fake.wait_for(lambda: slack.fake.responses(hook), timeout=30)
    (post,) = slack.fake.responses(hook)
    assert post.body["response_type"] == "ephemeral"
    reply = str(post.body["blocks"][0]["text"])
    assert _refused(reply, case, SLACK_STYLE), reply
    assert await state(slack.services) == before


@pytest.mark.parametrize("case", _cases(True, style=SLACK_STYLE), ids=str)
async def test_a_slack_member_who_is_no_admin_cannot_run_an_admin_command_in_a_dm(
    slack: Slack, case: AdminCase
) -> None:
    await _slack_try(slack, case, channel="D0MALLORY", user=SLACK_MALLORY)


@pytest.mark.parametrize("case", _cases(False, style=SLACK_STYLE), ids=str)
async def test_a_slack_member_who_is_no_admin_cannot_run_an_admin_command_in_a_channel(
    slack: Slack, case: AdminCase
) -> None:
    await _slack_try(slack, case, channel="C0GENERAL", user=SLACK_MALLORY + "2")


def test_the_drill_covers_every_admin_command() -> None:
    drilled = {case.words.split()[0] for case in _cases(True)}
    assert {"ingest", "jobs", "sync", "faq", "fallback", "mode", "kb"} <= drilled
