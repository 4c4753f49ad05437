"""Telegram messages as ragbot sees them: addressed or not, the conversation (chat, topic), commands, files."""

from __future__ import annotations

import re
from typing import Any

import pytest
from telegram import Bot, Message

from adapters.telegram import words as telegram_words
from adapters.telegram.translate import BotIdentity, Notice, translate
from bot.types import Command, IncomingMessage

ME = BotIdentity(id=999, username="ragbot")
BOT = Bot("999:TEST")
ALICE = {"id": 42, "is_bot": False, "first_name": "Alice"}
PRIVATE = {"id": 42, "type": "private", "first_name": "Alice"}
GROUP = {"id": -1001, "type": "supergroup", "title": "Team", "is_forum": True}
LIMIT = 20_000_000


async def _never(file_id: str) -> bytes:
    raise AssertionError("nothing is downloaded while translating")


def _message(chat: dict[str, Any], text: str | None = None, **fields: Any) -> Message:
    data: dict[str, Any] = {"message_id": 7, "date": 0, "chat": chat, "from": ALICE, **fields}
    if text is not None:
        data["text"] = text
    message = Message.de_json(data, BOT)
    assert message is not None
    return message


def _mention(text: str, at: str = "@ragbot") -> dict[str, Any]:
    offset = text.encode("utf-16-le").find(at.encode("utf-16-le")) // 2
    return {"entities": [{"type": "mention", "offset": offset, "length": len(at)}]}


def test_a_private_question_is_addressed_and_keeps_its_text() -> None:
    result = translate(_message(PRIVATE, "How do I reset my password?"), ME, _never, LIMIT)
    assert isinstance(result, IncomingMessage)
    assert (result.key.chat, result.key.thread, result.text, result.private) == (
        "42",
        "",
        "How do I reset my password?",
        True,
    )
    assert (result.user.id, result.message_id) == ("42", "7")


def test_a_group_mention_is_addressed_without_the_mention_and_chatter_goes_on_unaddressed() -> None:
    text = "🙂 @ragbot where is the VPN?"
    result = translate(_message(GROUP, text, **_mention(text)), ME, _never, LIMIT)
    assert isinstance(result, IncomingMessage)
    assert (result.text, result.addressed, result.private) == ("🙂 where is the VPN?", True, False)
    # Whether plain chatter is answered is the chat's answer mode (`/mode all`), which the manager reads.
    for text in ("where is lunch?", "@otherbot where is the VPN?"):
        chatter = translate(_message(GROUP, text), ME, _never, LIMIT)
        assert isinstance(chatter, IncomingMessage)
        assert (chatter.text, chatter.addressed, chatter.command) == (text, False, None)


@pytest.mark.parametrize(
    "fields",
    [
        {"new_chat_members": [ALICE]},
        {"left_chat_member": ALICE},
        {"pinned_message": {"message_id": 3, "date": 0, "chat": GROUP, "from": ALICE, "text": "hi"}},
        {"new_chat_title": "Team 2"},
        {"text": "where is lunch?", "from": {"id": 5, "is_bot": True, "first_name": "helper"}},
        {"document": {"file_id": "F", "file_unique_id": "F", "file_name": "a.pdf", "file_size": 1}},
    ],
)
def test_service_messages_other_bots_and_unaddressed_files_in_groups_are_ignored(fields: dict[str, Any]) -> None:
    assert translate(_message(GROUP, **fields), ME, _never, LIMIT) is None


def test_a_reply_to_the_bot_is_addressed_and_a_forum_topic_is_its_own_conversation() -> None:
    bot_message = {"message_id": 5, "date": 0, "chat": GROUP, "from": {"id": 999, "is_bot": True, "first_name": "rb"}}
    result = translate(
        _message(GROUP, "and how long?", reply_to_message=bot_message, message_thread_id=11, is_topic_message=True),
        ME,
        _never,
        LIMIT,
    )
    assert isinstance(result, IncomingMessage)
    assert (result.key.chat, result.key.thread) == ("-1001", "11")


@pytest.mark.parametrize(
    ("text", "name", "args"),
    [
        ("/kb list", "kb", ("list",)),
        ("/KB@ragbot list", "kb", ("list",)),
        ('/faq add "Q?" "A."', "faq", ("add", "Q?", "A.")),
    ],
)
def test_commands_are_parsed_in_groups_with_or_without_the_bot_name(
    text: str, name: str, args: tuple[str, ...]
) -> None:
    result = translate(_message(GROUP, text), ME, _never, LIMIT)
    assert isinstance(result, IncomingMessage)
    assert result.command is not None
    assert (result.command.name, result.command.args) == (name, args)
    assert translate(_message(GROUP, "/kb@otherbot list"), ME, _never, LIMIT) is None


def test_start_keeps_its_deep_link_payload_out_of_the_text_and_the_app_language_comes_along() -> None:
    result = translate(
        _message(PRIVATE, "/start ref42", **{"from": {**ALICE, "language_code": "zh-hans"}}), ME, _never, LIMIT
    )
    assert isinstance(result, IncomingMessage)
    assert result.command == Command("start", ("ref42",))
    assert result.user.language == "zh-hans"


def test_a_document_sent_privately_is_a_file_to_ingest_and_one_too_big_gets_a_notice() -> None:
    document = {"file_id": "F1", "file_unique_id": "U1", "file_name": "manual.pdf", "file_size": 1000}
    result = translate(_message(PRIVATE, document=document), ME, _never, LIMIT)
    assert isinstance(result, IncomingMessage)
    assert result.command == Command("ingest", implied=True)  # what the person did, not a command they typed
    assert [(a.name, a.size) for a in result.attachments] == [("manual.pdf", 1000)]
    huge = {**document, "file_size": 30_000_000}
    notice = translate(_message(PRIVATE, document=huge), ME, _never, LIMIT)
    assert isinstance(notice, Notice)
    text = notice.say("en")
    assert "manual.pdf" in text
    assert "20 MB" in text
    assert "admin of the server" in text
    assert re.search(r"\b[A-Z]+(?:_[A-Z]+)+\b", text) is None, text  # no setting's name
    assert notice.say("zh") == telegram_words.file_too_big("manual.pdf", LIMIT, "zh")


def test_a_caption_command_in_a_group_ingests_the_replied_to_file() -> None:
    document = {"file_id": "F2", "file_unique_id": "U2", "file_name": "faq.csv", "file_size": 10}
    replied = {"message_id": 3, "date": 0, "chat": GROUP, "from": ALICE, "document": document}
    result = translate(_message(GROUP, "/faq import", reply_to_message=replied), ME, _never, LIMIT)
    assert isinstance(result, IncomingMessage)
    assert result.command == Command("faq", ("import",), "import")
    assert [a.name for a in result.attachments] == ["faq.csv"]


STICKER = {
    "sticker": {
        "file_id": "S",
        "file_unique_id": "S",
        "width": 1,
        "height": 1,
        "is_animated": False,
        "is_video": False,
        "type": "regular",
    }
}
PHOTO = {
    "photo": [
        {"file_id": "small", "file_unique_id": "s", "width": 90, "height": 60, "file_size": 900},
        {"file_id": "large", "file_unique_id": "l", "width": 1280, "height": 960, "file_size": 90_000},
    ]
}
VOICE = {"voice": {"file_id": "V", "file_unique_id": "v", "duration": 4, "mime_type": "audio/ogg", "file_size": 9000}}
AUDIO = {"audio": {"file_id": "A", "file_unique_id": "a", "duration": 3600, "file_name": "talk.mp3"}}


def test_a_sticker_gets_a_notice_in_private_and_silence_in_groups() -> None:
    notice = translate(_message(PRIVATE, **STICKER), ME, _never, LIMIT)
    assert isinstance(notice, Notice)
    assert notice.say("en") == telegram_words.text_only("en")
    assert translate(_message(GROUP, **STICKER), ME, _never, LIMIT) is None


async def test_a_private_photo_is_a_question_carrying_its_largest_size_as_an_image() -> None:
    fetched: list[str] = []

    async def read(file_id: str) -> bytes:
        fetched.append(file_id)
        return b"jpeg"

    result = translate(_message(PRIVATE, caption="what is this error?", **PHOTO), ME, read, LIMIT)
    assert isinstance(result, IncomingMessage)
    assert (result.text, result.command) == ("what is this error?", None)
    (photo,) = result.attachments
    assert (photo.name, photo.size, photo.mime_type) == ("l.jpg", 90_000, "image/jpeg")
    assert photo.read is not None
    assert await photo.read() == b"jpeg"
    assert fetched == ["large"]


@pytest.mark.parametrize(("fields", "seconds", "mime"), [(VOICE, 4.0, "audio/ogg"), (AUDIO, 3600.0, "audio/mpeg")])
def test_voice_and_audio_carry_their_length_so_a_long_one_is_refused_unread(
    fields: dict[str, Any], seconds: float, mime: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "1")  # as adapters.telegram.app sets it: durations as timedelta
    result = translate(_message(PRIVATE, **fields), ME, _never, LIMIT)
    assert isinstance(result, IncomingMessage)
    (clip,) = result.attachments
    assert (clip.seconds, clip.mime_type, result.text) == (seconds, mime, "")


def test_in_a_group_a_photo_is_read_only_when_it_is_addressed_to_the_bot() -> None:
    assert translate(_message(GROUP, caption="look at this", **PHOTO), ME, _never, LIMIT) is None
    caption = "@ragbot what does this mean?"
    mentioned = translate(
        _message(GROUP, caption=caption, caption_entities=_mention(caption)["entities"], **PHOTO), ME, _never, LIMIT
    )
    assert isinstance(mentioned, IncomingMessage)
    assert (mentioned.text, len(mentioned.attachments)) == ("what does this mean?", 1)


def test_a_photo_over_what_bots_may_download_gets_the_platforms_notice() -> None:
    notice = translate(_message(PRIVATE, **PHOTO), ME, _never, 50_000)
    assert isinstance(notice, Notice)
    assert notice.say("en") == telegram_words.file_too_big("l.jpg", 50_000, "en")


def test_other_bots_channels_and_anonymous_admins_are_never_answered() -> None:
    from_bot = _message(PRIVATE, "hi", **{"from": {"id": 5, "is_bot": True, "first_name": "b"}})
    assert translate(from_bot, ME, _never, LIMIT) is None
    anonymous = _message(GROUP, "/ingest", sender_chat={"id": -1001, "type": "supergroup", "title": "Team"})
    assert translate(anonymous, ME, _never, LIMIT) is None
