"""Who the Telegram bot is open to: the allow-lists' meaning, their settings, and telling a stranger once a while."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from adapters.telegram.access import Access, Refusals
from adapters.telegram.settings import TelegramSettings

FRIEND, ADMIN, STRANGER, GROUP = 11, 12, 13, -1001


@pytest.mark.parametrize(
    ("chat", "private", "user", "admitted"),
    [
        (FRIEND, True, FRIEND, True),
        (ADMIN, True, ADMIN, True),
        (STRANGER, True, STRANGER, False),
        (GROUP, False, STRANGER, True),  # everyone in a listed group
        (-1002, False, FRIEND, False),  # a listed person does not bring an unlisted group in
        (-1002, False, None, False),
    ],
)
def test_a_private_chat_is_let_in_by_its_person_and_a_group_by_its_chat_id(
    chat: int, private: bool, user: int | None, admitted: bool
) -> None:
    access = TelegramSettings(
        TELEGRAM_ADMINS=str(ADMIN), TELEGRAM_ALLOWED_USERS=str(FRIEND), TELEGRAM_ALLOWED_CHATS=str(GROUP)
    ).access()
    assert access.admits(chat, private=private, user_id=user) is admitted


def test_nothing_listed_admits_no_one_and_allow_everyone_admits_anyone() -> None:
    closed = TelegramSettings().access()
    assert closed.nobody
    assert not closed.admits(STRANGER, private=True, user_id=STRANGER)
    assert Access(everyone=True).admits(-1002, private=False, user_id=None)


@pytest.mark.parametrize(
    ("field", "value"),
    [("TELEGRAM_ALLOWED_USERS", "@bob"), ("TELEGRAM_ALLOWED_USERS", "-5"), ("TELEGRAM_ALLOWED_CHATS", "@team")],
)
def test_allow_lists_take_numeric_ids_only(field: str, value: str) -> None:
    with pytest.raises(ValidationError, match="numeric Telegram"):
        TelegramSettings(**{field: value})  # type: ignore[arg-type]


def test_a_stranger_is_told_once_a_while_however_much_they_write() -> None:
    now = [0.0]
    refusals = Refusals(clock=lambda: now[0])
    assert refusals.first(STRANGER)
    assert not refusals.first(STRANGER)
    assert refusals.first(GROUP)
    now[0] += 601
    assert refusals.first(STRANGER)
