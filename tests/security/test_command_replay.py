"""Commands replayed or flooded: a platform's redelivery of a command, even after a restart, runs it once; a burst
of commands from one person is limited like questions are."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bot.app.services import build_services
from bot.words import messages
from fakes.slack import events
from fakes.telegram import FakeTelegramBotAPI
from tests.conftest import EmbeddedSettings
from tests.security.commands_support import (
    SLACK_ADMIN,
    SLACK_TEAM,
    fake_slack,
    first_of,
    seed,
    slack_app,
    slack_settings,
    watching,
    web_chat,
    web_command,
    web_session,
)
from tests.security.telegram_support import ADMIN, running_adapter, telegram_settings

PARKING = b"# Parking\n\nVisitors park in the Marigold garage."


async def test_a_telegram_update_delivered_again_after_a_restart_does_not_run_ingest_twice(
    tmp_path: Path, embedded_settings: EmbeddedSettings
) -> None:
    async with FakeTelegramBotAPI(limits_on=False) as fake:
        settings = telegram_settings(tmp_path, fake, embedded_settings)
        async with build_services(settings) as services:
            await seed(services)
            await services.jobs.start()
            try:
                file_id = fake.add_file(PARKING, "parking.md", "text/markdown")
                update = fake.document_message(file_id, caption="/ingest", user=ADMIN)
                async with running_adapter(services, settings):
                    fake.queue_update(update)
                    await fake.wait_for(lambda: "parking.md: indexed" in " ".join(fake.visible(ADMIN["id"])), 60)
                jobs, shown = len(await services.job_repo.recent(limit=None)), len(fake.bot_messages(ADMIN["id"]))
                # ragbot restarted before Telegram had the update confirmed: the same update comes again.
                async with (
                    watching("bot.chat.manager", "command=duplicate") as line,
                    running_adapter(services, settings),
                ):
                    fake.queue_update(update)
                    grown = fake.wait_for(lambda: len(fake.bot_messages(ADMIN["id"])) > shown, timeout=60)
                    await first_of(line.seen.wait(), grown, timeout=60)
                assert len(await services.job_repo.recent(limit=None)) == jobs
                assert len(fake.bot_messages(ADMIN["id"])) == shown
            finally:
                await services.jobs.stop()


async def test_a_slack_event_delivered_again_after_a_restart_does_not_run_ingest_twice(
    tmp_path: Path, embedded_settings: EmbeddedSettings
) -> None:
    async with fake_slack() as fake:
        settings = slack_settings(tmp_path, fake, embedded_settings)
        async with build_services(settings) as services:
            await seed(services)
            await services.jobs.start()
            try:
                file = fake.add_file(SLACK_TEAM, "parking.md", PARKING, mimetype="text/markdown")
                ts = fake.user_message(SLACK_TEAM, "D0ADMIN", SLACK_ADMIN, "")
                event = events.file_share(channel="D0ADMIN", user=SLACK_ADMIN, files=[file], team=SLACK_TEAM, ts=ts)
                delivery = events.envelope(event, team_id=SLACK_TEAM)
                replies: Callable[[], list[str]] = lambda: [  # noqa: E731
                    m.text for m in fake.visible("D0ADMIN") if m.bot_id and m.thread_ts is None
                ]
                async with slack_app(services, settings, fake) as slack:
                    assert await slack.post(delivery) == 200
                    await fake.wait_for(lambda: "parking.md: indexed" in " ".join(replies()), timeout=60)
                jobs, shown = len(await services.job_repo.recent(limit=None)), len(replies())
                # Slack retries a delivery it saw no 200 for; ragbot restarted in between and forgot its event ids.
                async with (
                    watching("bot.chat.manager", "command=duplicate") as line,
                    slack_app(services, settings, fake) as slack,
                ):
                    assert await slack.post(delivery) == 200
                    await first_of(line.seen.wait(), fake.wait_for(lambda: len(replies()) > shown, 60), timeout=60)
                assert len(await services.job_repo.recent(limit=None)) == jobs
                assert len(replies()) == shown
            finally:
                await services.jobs.stop()


async def test_a_burst_of_100_kb_list_commands_is_limited(tmp_path: Path, embedded_settings: EmbeddedSettings) -> None:
    # On the web, where nothing paces the replies (Telegram sends one a second to a private chat); the limit is the
    # manager's, the same for every platform.
    async with web_chat(tmp_path, embedded_settings) as (_, url, _faq), web_session(url) as browser:
        replies = [await web_command(browser, "/kb list") for _ in range(100)]
    lists = [text for text in replies if "**handbook**" in text]
    slow_down = messages.rate_limited(60, "en").split(" about ")[0]
    assert len(lists) == 30  # ChatPolicy.command_rate_limit: 30 a minute
    # Told once to slow down; the rest of the flood gets nothing (it cannot spend the chat's send budget).
    assert replies[30].startswith(slow_down)
    assert replies[31:] == [""] * 69
