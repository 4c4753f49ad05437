"""Forged Telegram webhook deliveries: without the secret Telegram was given, nothing is read, run or answered."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from aiohttp import web
from pydantic import SecretStr

from adapters.telegram.app import WEBHOOK_PATH, TelegramAdapter
from adapters.telegram.app import create as create_telegram
from bot.app.manager import build_manager, chat_policy
from bot.app.services import Services, build_services
from bot.errors import StartupError
from fakes.telegram import FakeTelegramBotAPI
from harness.processes import free_port
from rag.ingest.documents import SourceFile
from tests.conftest import EmbeddedSettings
from tests.security.telegram_support import ADMIN, HANDBOOK, person, telegram_settings

SECRET = "s3cret_Token-of-the_webhook"


@pytest_asyncio.fixture(scope="module")
async def hooked(
    tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings
) -> AsyncIterator[tuple[FakeTelegramBotAPI, Services, str]]:
    """A bot in webhook mode on ragbot's own aiohttp server: the fake Bot API, the services, the webhook URL."""
    async with FakeTelegramBotAPI(limits_on=False) as fake:
        port = free_port()
        url = f"http://127.0.0.1:{port}{WEBHOOK_PATH}"
        settings = telegram_settings(
            tmp_path_factory.mktemp("telegram-webhook"),
            fake,
            embedded_settings,
            TELEGRAM_ALLOW_EVERYONE=True,  # anyone's update would be answered: only the secret stands in the way
            TELEGRAM_MODE="webhook",
            TELEGRAM_WEBHOOK_URL=url,
            TELEGRAM_WEBHOOK_SECRET=SecretStr(SECRET),
        )
        async with build_services(settings) as services:
            kb = await services.knowledge.create("handbook", {})
            await services.ingestor.ingest(kb, SourceFile(HANDBOOK, "upload:handbook.md", "handbook.md"))
            adapter = create_telegram(build_manager(services, chat_policy(settings)), settings, services.db)
            assert isinstance(adapter, TelegramAdapter)
            app = web.Application()
            adapter.mount(app)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", port).start()
            await adapter.start()
            try:
                yield fake, services, url
            finally:
                await adapter.stop()
                await runner.cleanup()


@pytest.mark.parametrize(
    "secret",
    # (Whitespace around a header value is no part of it in HTTP, so " SECRET" is the secret.)
    [None, "", "wrong", SECRET.lower(), SECRET[:-1], SECRET + "x", "s" * 256],
    ids=["missing", "empty", "wrong", "other-case", "prefix", "longer", "max-length"],
)
async def test_a_webhook_delivery_with_a_wrong_or_missing_secret_is_refused_and_runs_nothing(
    hooked: tuple[FakeTelegramBotAPI, Services, str], secret: str | None
) -> None:
    fake, services, url = hooked
    forged = fake.private_message("/kb create stolen", user=ADMIN)  # the admin's id, as a forger would pick
    jobs = len(await services.job_repo.recent(limit=None))
    assert await fake.post_webhook(url, forged, secret=secret) == 403
    assert fake.calls("sendMessage") == []
    assert await services.knowledge.named("stolen") is None
    assert len(await services.job_repo.recent(limit=None)) == jobs
    assert await services.conversations.find("telegram", "", str(ADMIN["id"])) is None


async def test_the_right_secret_is_let_through(hooked: tuple[FakeTelegramBotAPI, Services, str]) -> None:
    fake, _, url = hooked
    someone = person(7301)
    assert await fake.post_webhook(url, fake.private_message("When is lunch served?", user=someone), SECRET) == 200
    await fake.wait_for(lambda: any(m.reply_markup for m in fake.bot_messages(someone["id"])), timeout=60)
    assert "noon" in fake.visible(someone["id"])[0]


def test_webhook_mode_without_a_secret_refuses_to_start() -> None:
    from adapters.telegram.settings import TelegramSettings

    telegram = TelegramSettings(
        TELEGRAM_BOT_TOKEN=SecretStr("123:abc"), TELEGRAM_MODE="webhook", TELEGRAM_WEBHOOK_URL="https://bot.example"
    )
    with pytest.raises(StartupError, match="TELEGRAM_WEBHOOK_SECRET"):
        telegram.check(serving=True, host="127.0.0.1")
