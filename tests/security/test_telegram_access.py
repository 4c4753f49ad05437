"""Telegram is private by default: strangers, and groups nobody listed, get one line and nothing else."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from adapters.telegram import words as telegram_words
from adapters.telegram.app import create as create_telegram
from bot.app.settings import Settings
from bot.cli.doctor import platform_advice, render
from fakes.telegram import FakeTelegramBotAPI
from tests.conftest import EmbeddedSettings
from tests.security.telegram_support import ADMIN, TelegramBot, person, telegram_bot

FRIEND = person(7101, "Fay")
TEAM_GROUP = -100201
STRANGERS_GROUP = -100202


@pytest_asyncio.fixture(scope="module")
async def bot(
    tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings
) -> AsyncIterator[TelegramBot]:
    async with telegram_bot(
        tmp_path_factory.mktemp("telegram-private"),
        embedded_settings,
        TELEGRAM_ALLOWED_USERS=str(FRIEND["id"]),
        TELEGRAM_ALLOWED_CHATS=str(TEAM_GROUP),
    ) as running:
        yield running


def _refusals(caplog: pytest.LogCaptureFixture, chat_id: int) -> int:
    """How many messages of this chat the bot refused so far (told or not)."""
    return sum(f"telegram=refused chat={chat_id} " in record.getMessage() for record in caplog.records)


async def _answered(fake: FakeTelegramBotAPI, chat_id: int) -> str:
    await fake.wait_for(lambda: any(m.reply_markup for m in fake.bot_messages(chat_id)), timeout=60)
    return fake.visible(chat_id)[-1]


@pytest.fixture(autouse=True)
def _debug_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="adapters.telegram.app")


async def test_a_strangers_private_question_gets_one_line_with_their_id_and_nothing_from_the_knowledge_base(
    bot: TelegramBot, caplog: pytest.LogCaptureFixture
) -> None:
    fake, stranger = bot.fake, person(7901)
    fake.queue_update(fake.private_message("When is lunch served?", user=stranger))
    fake.queue_update(fake.private_message("How do I install the VPN client?", user=stranger))
    await fake.wait_for(lambda: _refusals(caplog, stranger["id"]) == 2, timeout=30)
    assert fake.visible(stranger["id"]) == [telegram_words.private_bot(stranger["id"], "en")]
    assert fake.visible(stranger["id"]) == [
        "This bot is private. Ask its operator to add your id 7901 to TELEGRAM_ALLOWED_USERS."
    ]
    assert await bot.services.conversations.find("telegram", "", str(stranger["id"])) is None  # nothing stored


@pytest.mark.parametrize("command", ["/kb list", "/kb info handbook", "/start", "/help", "/sources"])
async def test_a_stranger_running_a_command_learns_no_knowledge_base_name(
    bot: TelegramBot, caplog: pytest.LogCaptureFixture, command: str
) -> None:
    fake, stranger = bot.fake, person(7910 + len(command))
    fake.queue_update(fake.private_message(command, user=stranger))
    await fake.wait_for(lambda: _refusals(caplog, stranger["id"]) == 1, timeout=30)
    (shown,) = fake.visible(stranger["id"])
    assert shown == telegram_words.private_bot(stranger["id"], "en")
    assert "handbook" not in shown


async def test_a_group_nobody_listed_gets_one_line_then_the_bot_leaves_it_and_answers_nothing(
    bot: TelegramBot, caplog: pytest.LogCaptureFixture
) -> None:
    fake = bot.fake
    # Even an allowed person cannot bring the bot into a group of people nobody let in.
    fake.queue_update(fake.group_message("When is lunch served?", chat_id=STRANGERS_GROUP, user=FRIEND))
    await fake.wait_for(lambda: STRANGERS_GROUP in fake.left, timeout=30)
    fake.queue_update(fake.group_message("/kb list", chat_id=STRANGERS_GROUP, user=person(7920), mention=False))
    await fake.wait_for(lambda: _refusals(caplog, STRANGERS_GROUP) == 2, timeout=30)
    assert fake.visible(STRANGERS_GROUP) == [
        "This group is not allowed to use this bot; its operator can add chat id -100202 to "
        "TELEGRAM_ALLOWED_CHATS. The bot leaves the group now."
    ]
    assert [call.params["chat_id"] for call in fake.calls("leaveChat")] == [STRANGERS_GROUP]
    assert await bot.services.conversations.find("telegram", "", str(STRANGERS_GROUP)) is None


async def test_a_listed_person_the_admin_and_anyone_in_a_listed_group_are_answered(bot: TelegramBot) -> None:
    fake = bot.fake
    fake.queue_update(fake.private_message("When is lunch served?", user=FRIEND))
    fake.queue_update(fake.private_message("When is lunch served?", user=ADMIN))
    fake.queue_update(fake.group_message("How do I install the VPN client?", chat_id=TEAM_GROUP, user=person(7940)))
    assert "noon" in await _answered(fake, FRIEND["id"])
    assert "noon" in await _answered(fake, ADMIN["id"])
    assert "Software Center" in await _answered(fake, TEAM_GROUP)
    assert TEAM_GROUP not in fake.left


@pytest.mark.parametrize(
    ("settings", "private"),
    [
        ({}, True),
        ({"TELEGRAM_ADMINS": "7001"}, True),
        ({"TELEGRAM_ALLOWED_USERS": "7101"}, False),
        ({"TELEGRAM_ALLOWED_CHATS": "-100201"}, False),
        ({"TELEGRAM_ALLOW_EVERYONE": "true"}, False),
    ],
)
def test_a_bot_nobody_may_use_says_so_at_start_and_in_the_doctor(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, settings: dict[str, str], private: bool
) -> None:
    configured = Settings(_env_file=None, RAGBOT_DATA_DIR=tmp_path, TELEGRAM_BOT_TOKEN="123:abc", **settings)  # type: ignore[call-arg]
    doctor = render(platform_advice(configured))
    with caplog.at_level(logging.WARNING, logger="adapters.telegram.app"):
        create_telegram(None, configured, None)  # type: ignore[arg-type]
    warned = [record.getMessage() for record in caplog.records if "telegram=private" in record.getMessage()]
    assert bool(warned) == private
    assert doctor.startswith("MISSING  telegram") == private
    if private:
        assert "may use the Telegram bot" in doctor
        assert "TELEGRAM_ALLOWED_USERS" in warned[0]
        assert "TELEGRAM_ALLOWED_CHATS" in doctor
