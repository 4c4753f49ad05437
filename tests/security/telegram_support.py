"""A Telegram bot for the security drills: the real adapter (python-telegram-bot) over real services, polling the
fake Bot API, with a handbook knowledge base; and the state a refused command must leave as it was."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.telegram.app import TelegramAdapter
from adapters.telegram.app import create as create_telegram
from bot.app.manager import build_manager, chat_policy
from bot.app.services import Services, build_services
from bot.app.settings import Settings
from bot.chat.manager import ConversationManager
from fakes.telegram import FakeTelegramBotAPI
from rag.ingest.documents import SourceFile
from tests.conftest import EmbeddedSettings

ADMIN: dict[str, Any] = {"id": 7001, "is_bot": False, "first_name": "Ada", "username": "ada"}
HANDBOOK = (
    b"# VPN\n\nThe VPN client is installed from the Software Center. It connects with your badge number.\n\n"
    b"# Lunch\n\nLunch is served from noon in the atrium on the second floor.\n"
)


def person(user_id: int, name: str = "Sam") -> dict[str, Any]:
    """A Telegram user as an update carries them."""
    return {"id": user_id, "is_bot": False, "first_name": name, "language_code": "en"}


@dataclass
class TelegramBot:
    """A running bot: its services, the fake Bot API, the manager and the adapter over them."""

    services: Services
    fake: FakeTelegramBotAPI
    manager: ConversationManager
    settings: Settings
    adapter: TelegramAdapter


def telegram_settings(
    data: Path, fake: FakeTelegramBotAPI, embedded_settings: EmbeddedSettings, **extra: Any
) -> Settings:
    """The settings of a bot on the fake Bot API, reading the handbook, with ADMIN as its admin."""
    return embedded_settings(
        data,
        DEFAULT_KNOWLEDGE_BASES="handbook",
        TELEGRAM_BOT_TOKEN=fake.token,
        TELEGRAM_ADMINS=str(ADMIN["id"]),
        TELEGRAM_API_BASE_URL=fake.base_url,
        TELEGRAM_FILE_BASE_URL=fake.base_file_url,
        **extra,
    )


@asynccontextmanager
async def running_adapter(
    services: Services, settings: Settings
) -> AsyncIterator[tuple[ConversationManager, TelegramAdapter]]:
    """A manager and a polling adapter over `services`: what `ragbot serve` runs, started and stopped again."""
    manager = build_manager(services, chat_policy(settings))
    adapter = create_telegram(manager, settings, services.db)
    assert isinstance(adapter, TelegramAdapter)
    await adapter.start()
    try:
        yield manager, adapter
    finally:
        await adapter.stop()


@asynccontextmanager
async def telegram_bot(data: Path, embedded_settings: EmbeddedSettings, **extra: Any) -> AsyncIterator[TelegramBot]:
    """A bot with the handbook ingested, polling a fresh fake Bot API; `extra` are more settings."""
    async with FakeTelegramBotAPI(limits_on=False) as fake:
        settings = telegram_settings(data, fake, embedded_settings, **extra)
        async with build_services(settings) as services:
            kb = await services.knowledge.create("handbook", {})
            await services.ingestor.ingest(kb, SourceFile(HANDBOOK, "upload:handbook.md", "handbook.md"))
            await services.jobs.start()
            try:
                async with running_adapter(services, settings) as (manager, adapter):
                    yield TelegramBot(services, fake, manager, settings, adapter)
            finally:
                await services.jobs.stop()
