"""The fakes' limits the feedback reasons lean on, driven by the real clients: Slack's views.open (a trigger_id used
once, a modal's limits) and Telegram's callback data (at most 64 bytes) and callback answers (200 characters)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup
from telegram.error import BadRequest

from fakes.slack import FakeSlackAPI
from fakes.telegram import FakeTelegramBotAPI
from tests.e2e.test_fake_slack import install, web
from tests.e2e.test_fake_telegram import make_bot


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlackAPI]:
    async with FakeSlackAPI(limits_on=False) as running:
        yield install(running)


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegramBotAPI]:
    async with FakeTelegramBotAPI(limits_on=False) as running:
        yield running


def _modal(**changes: Any) -> dict[str, Any]:
    view: dict[str, Any] = {
        "type": "modal",
        "callback_id": "why",
        "title": {"type": "plain_text", "text": "What went wrong?"},
        "submit": {"type": "plain_text", "text": "Send"},
        "blocks": [
            {
                "type": "input",
                "block_id": "note",
                "label": {"type": "plain_text", "text": "Note"},
                "element": {"type": "plain_text_input", "action_id": "text", "max_length": 500},
            }
        ],
    }
    return view | changes


async def test_views_open_opens_a_modal_once_per_trigger_and_records_it(slack: FakeSlackAPI) -> None:
    client = web(slack)
    opened = await client.views_open(trigger_id="1.abc", view=_modal())
    assert opened["view"]["callback_id"] == "why"
    assert [view["trigger_id"] for view in slack.views_opened] == ["1.abc"]
    with pytest.raises(SlackApiError) as again:
        await client.views_open(trigger_id="1.abc", view=_modal())
    assert again.value.response["error"] == "trigger_exchanged"


@pytest.mark.parametrize(
    "changes",
    [
        {"title": {"type": "plain_text", "text": "x" * 25}},
        {"submit": {"type": "plain_text", "text": "x" * 25}},
        {"private_metadata": "x" * 3_001},
        {"blocks": []},
        {"blocks": [{"type": "divider"}] * 101},
        {"type": "home"},
        {"blocks": [{"type": "input", "element": {"type": "plain_text_input", "action_id": "t", "max_length": 3_001}}]},
    ],
    ids=["title", "submit", "metadata", "no blocks", "101 blocks", "not a modal", "input max_length"],
)
async def test_views_open_refuses_a_modal_past_slacks_limits(slack: FakeSlackAPI, changes: dict[str, Any]) -> None:
    with pytest.raises(SlackApiError) as refused:
        await web(slack).views_open(trigger_id="2.def", view=_modal(**changes))
    assert refused.value.response["error"] == "invalid_arguments"
    assert slack.views_opened == []


async def test_telegram_refuses_callback_data_over_64_bytes(telegram: FakeTelegramBotAPI) -> None:
    async with make_bot(telegram) as bot:
        chat = await _chat(bot, telegram)
        fits = InlineKeyboardMarkup([[InlineKeyboardButton("ok", callback_data="x" * 64)]])
        await bot.send_message(chat, "fits", reply_markup=fits)
        too_long = InlineKeyboardMarkup([[InlineKeyboardButton("no", callback_data="é" * 33)]])  # 66 bytes
        with pytest.raises(BadRequest, match=r"(?i)button_data_invalid"):
            await bot.send_message(chat, "too long", reply_markup=too_long)


async def test_telegram_refuses_a_callback_answer_over_200_characters(telegram: FakeTelegramBotAPI) -> None:
    async with make_bot(telegram) as bot:
        chat = await _chat(bot, telegram)
        sent = await bot.send_message(
            chat, "rate me", reply_markup=InlineKeyboardMarkup([[InlineKeyboardButton("👎", callback_data="down")]])
        )
        update = telegram.callback_query("down", message_id=sent.message_id, chat_id=chat)
        query_id = update["callback_query"]["id"]
        with pytest.raises(BadRequest, match=r"(?i)message_too_long"):
            await bot.answer_callback_query(query_id, text="x" * 201)
        assert await bot.answer_callback_query(query_id, text="x" * 200)


async def _chat(bot: Bot, telegram: FakeTelegramBotAPI) -> int:
    """A private chat the bot may write to: one a person opened by writing to it."""
    update = telegram.private_message("hello")
    return int(update["message"]["chat"]["id"])
