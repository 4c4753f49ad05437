"""Why a 👎 in Telegram: the reasons offered under a 👎 answer, one tap each, through the real python-telegram-bot
against the fake Bot API (which refuses callback data over 64 bytes)."""

from __future__ import annotations

from adapters.telegram.reply import reason_data
from bot.chat.feedback import REASONS
from bot.words import messages
from tests.e2e.test_telegram import Bot, _answered, _buttons, _press, _stored_answer, telegram

__all__ = ["telegram"]  # the module's Telegram world, shared with test_telegram's fixture

PIA = {"id": 7801, "is_bot": False, "first_name": "Pia"}
GROUP = -100780
AMIR = {"id": 7802, "is_bot": False, "first_name": "Amir"}
BEA = {"id": 7803, "is_bot": False, "first_name": "Bea"}


async def test_a_reason_picked_in_one_tap_is_stored_and_shown_in_place_of_the_buttons(telegram: Bot) -> None:
    fake = telegram.fake
    fake.queue_update(fake.private_message("When is lunch served?", user=PIA))
    await _answered(fake, PIA["id"], 1)
    answer = await _stored_answer(telegram.services, str(PIA["id"]))
    shown = int(answer.platform_message_id)
    await _press(fake, f"fb:down:{answer.id}", shown, PIA["id"], PIA)
    reasons = [messages.feedback_reason(reason, "en") for reason in REASONS]
    await fake.wait_for(lambda: _buttons(fake, PIA["id"], shown)[1:] == reasons, timeout=10)
    assert all(len(reason_data(reason, answer.id).encode()) <= 64 for reason in REASONS)

    await _press(fake, reason_data("too_long", answer.id), shown, PIA["id"], PIA)
    noted = [messages.feedback_noted("too_long", "en")]
    await fake.wait_for(lambda: _buttons(fake, PIA["id"], shown) == noted, timeout=10)
    stored = await telegram.services.conversations.message(answer.id)
    assert (stored.feedback, stored.feedback_reason, stored.feedback_by) == ("down", "too_long", str(PIA["id"]))
    await _press(fake, reason_data("too_long", answer.id), shown, PIA["id"], PIA)  # an old button pressed again
    assert (await telegram.services.conversations.message(answer.id)).feedback_reason == "too_long"


async def test_in_a_group_only_who_pressed_thumbs_down_may_pick_and_nobody_picks_without_one(telegram: Bot) -> None:
    fake = telegram.fake
    asked = fake.queue_update(fake.group_message("When is lunch served?", chat_id=GROUP, user=AMIR))
    await _answered(fake, GROUP, 1)
    # A group's question is a conversation of its own, named by the message that asked it (its reply chain).
    answer = await _stored_answer(telegram.services, str(GROUP), f"reply:{asked['message']['message_id']}")
    shown = int(answer.platform_message_id)

    before = len(fake.callback_answers)
    await _press(fake, reason_data("wrong", answer.id), shown, GROUP, BEA)  # an old keyboard, no 👎 given
    assert list(fake.callback_answers.values())[before]["text"] == messages.feedback_reason_refused("not_down", "en")

    await _press(fake, f"fb:down:{answer.id}", shown, GROUP, AMIR)
    await fake.wait_for(lambda: len(_buttons(fake, GROUP, shown)) == 1 + len(REASONS), timeout=10)
    await _press(fake, reason_data("wrong", answer.id), shown, GROUP, BEA)
    assert list(fake.callback_answers.values())[-1]["text"] == messages.feedback_reason_refused("not_rater", "en")
    assert (await telegram.services.conversations.message(answer.id)).feedback_reason == ""
    assert len(_buttons(fake, GROUP, shown)) == 1 + len(REASONS)  # still offered to Amir

    await _press(fake, reason_data("wrong", answer.id), shown, GROUP, AMIR)
    await fake.wait_for(lambda: _buttons(fake, GROUP, shown) == [messages.feedback_noted("wrong", "en")], timeout=10)
    assert (await telegram.services.conversations.message(answer.id)).feedback_reason == "wrong"
