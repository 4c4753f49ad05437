"""Slack events as ragbot sees them: who was addressed, the conversation (channel thread, DM), commands, files."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from adapters.slack import words as slack_words
from adapters.slack.translate import (
    Notice,
    Place,
    command_style,
    conversation_key,
    mistyped_word,
    place,
    plain_text,
    slash_command,
    translate,
    workspace_id,
)
from bot.types import Command, ConversationKey, IncomingMessage

BOT = "UBOT"
SLACK = command_style("/kb")
COMMANDS = frozenset({"help", "new", "stop", "sources", "kb", "ingest", "jobs", "faq", "mode", "fallback"})


async def _never(entry: Mapping[str, Any]) -> bytes:
    raise AssertionError("nothing is downloaded while translating")


def _event(text: str, **fields: Any) -> dict[str, Any]:
    return {"type": "message", "user": "U1", "text": text, "ts": "1700000000.000100", "channel": "C1", **fields}


def _translate(event: dict[str, Any], *, continuing: bool = False) -> IncomingMessage | Notice | None:
    return translate(event, place(event, "T1"), bot_user_id=BOT, continuing=continuing, read=_never, style=SLACK)


def test_a_channel_mention_starts_a_conversation_keyed_by_its_own_thread() -> None:
    event = _event(f"<@{BOT}> how do I ingest a folder?", type="app_mention")
    message = _translate(event)
    assert isinstance(message, IncomingMessage)
    assert message.text == "how do I ingest a folder?"
    assert message.key == ConversationKey("slack", "T1", "C1", "1700000000.000100")
    assert (message.private, message.addressed, message.message_id) == (False, True, "1700000000.000100")


def test_a_reply_in_a_thread_continues_the_threads_conversation() -> None:
    event = _event("and what about zip files?", thread_ts="1700000000.000001")
    message = _translate(event, continuing=True)
    assert isinstance(message, IncomingMessage)
    assert message.key.thread == "1700000000.000001"


def test_channel_chatter_without_a_mention_is_not_for_the_bot() -> None:
    assert _translate(_event("lunch anyone?")) is None


def test_a_whole_dm_is_one_conversation_answered_in_the_dm_itself() -> None:
    event = _event("hello", channel="D1", channel_type="im")
    where = place(event, "T1")
    assert where == Place("T1", "D1", "", True)
    assert conversation_key(where) == ConversationKey("slack", "T1", "D1", "")
    in_a_thread = place(_event("and then?", channel="D1", channel_type="im", thread_ts="1700000000.000001"), "T1")
    assert in_a_thread == Place(
        "T1", "D1", "1700000000.000001", True
    )  # a person who writes in a thread is answered there
    assert conversation_key(in_a_thread) == conversation_key(where)
    message = _translate(event)
    assert isinstance(message, IncomingMessage)
    assert message.private


@pytest.mark.parametrize(
    "fields",
    [
        {"bot_id": "B1"},
        {"subtype": "bot_message", "bot_id": "B2"},
        {"subtype": "message_changed"},
        {"subtype": "message_deleted"},
        {"subtype": "channel_join"},
        {"user": None},
    ],
)
def test_bots_edits_deletions_and_joins_never_trigger_an_answer(fields: dict[str, Any]) -> None:
    assert _translate(_event(f"<@{BOT}> hi", type="app_mention", **fields)) is None


def test_a_message_with_only_a_mention_gets_a_hint() -> None:
    notice = _translate(_event(f"<@{BOT}>", type="app_mention"))
    assert isinstance(notice, Notice)
    assert notice.say("en") == slack_words.empty_mention("en", SLACK)
    assert "`/kb help`" in notice.say("en")


def test_a_mention_with_a_command_runs_it() -> None:
    message = _translate(_event(f"<@{BOT}> /kb use handbook", type="app_mention"))
    assert isinstance(message, IncomingMessage)
    assert message.command == Command("kb", ("use", "handbook"), "use handbook")


def test_links_mentions_and_entities_read_as_a_person_reads_them() -> None:
    text = "<@UBOT|ragbot> see <https://example.com/a?b=1&amp;c=2|the doc> &amp; ask <@U2|bob> in <#C9|general>"
    assert plain_text(text, BOT) == "see https://example.com/a?b=1&c=2 & ask @bob in #general"


def test_a_file_shared_in_a_dm_is_a_file_to_ingest() -> None:
    event = _event(
        "",
        channel="D1",
        channel_type="im",
        subtype="file_share",
        files=[{"id": "F1", "name": "guide.pdf", "size": 1234, "mimetype": "application/pdf"}],
    )
    message = _translate(event)
    assert isinstance(message, IncomingMessage)
    assert message.command == Command("ingest", implied=True)
    assert [(a.name, a.size, a.mime_type) for a in message.attachments] == [("guide.pdf", 1234, "application/pdf")]
    assert message.style == SLACK


SCREENSHOT = {"id": "F2", "name": "error.png", "size": 2048, "mimetype": "image/png"}
CLIP = {"id": "F3", "name": "clip.webm", "size": 4096, "mimetype": "audio/webm", "duration_ms": 4500}


@pytest.mark.parametrize(
    ("text", "channel", "asked"),
    [("what does this mean?", "D1", "what does this mean?"), (f"<@{BOT}> why?", "C1", "why?"), ("", "D1", "")],
)
def test_an_image_or_audio_clip_shared_with_the_bot_is_a_question_not_a_file_to_ingest(
    text: str, channel: str, asked: str
) -> None:
    event = _event(text, channel=channel, subtype="file_share", files=[SCREENSHOT, CLIP])
    message = _translate(event)
    assert isinstance(message, IncomingMessage)
    assert (message.command, message.text) == (None, asked)
    assert [(a.name, a.mime_type, a.seconds) for a in message.attachments] == [
        ("error.png", "image/png", None),
        ("clip.webm", "audio/webm", 4.5),
    ]


@pytest.mark.parametrize(("text", "channel"), [("ingest", "D1"), (f"<@{BOT}> Ingest", "C1")])
def test_an_image_shared_with_the_word_ingest_is_a_file_to_learn(text: str, channel: str) -> None:
    message = _translate(_event(text, channel=channel, subtype="file_share", files=[SCREENSHOT]))
    assert isinstance(message, IncomingMessage)
    assert message.command == Command("ingest", implied=True)
    assert [a.name for a in message.attachments] == ["error.png"]


def test_an_image_shared_beside_a_document_goes_with_it_to_ingestion() -> None:
    files = [SCREENSHOT, {"id": "F1", "name": "guide.pdf", "size": 1234, "mimetype": "application/pdf"}]
    message = _translate(_event("", channel="D1", channel_type="im", subtype="file_share", files=files))
    assert isinstance(message, IncomingMessage)
    assert message.command == Command("ingest", implied=True)


def test_an_image_shared_in_a_channel_without_a_mention_is_not_read() -> None:
    assert _translate(_event("look", subtype="file_share", files=[SCREENSHOT])) is None


@pytest.mark.parametrize(("text", "channel"), [("faq import", "D1"), (f"<@{BOT}> FAQ import", "C1")])
def test_a_sheet_shared_with_the_words_faq_import_is_imported_as_faqs(text: str, channel: str) -> None:
    files = [{"id": "F1", "name": "faq.csv", "size": 10, "mimetype": "text/csv"}]
    message = _translate(_event(text, channel=channel, subtype="file_share", files=files))
    assert isinstance(message, IncomingMessage)
    assert message.command == Command("faq", ("import",), "import")
    assert [a.name for a in message.attachments] == ["faq.csv"]


@pytest.mark.parametrize(
    ("command", "written"),
    [("jobs", "/kb jobs"), ("help", "/kb help"), ("kb", "/kb"), ("kb use", "/kb use"), ("faq list", "/kb faq list")],
)
def test_slack_writes_every_command_after_its_one_slash_command(command: str, written: str) -> None:
    assert SLACK.written(command) == written
    assert command_style("/ragbot").written(command) == written.replace("/kb", "/ragbot")
    assert not SLACK.attachments


def test_a_file_shared_in_a_channel_without_a_mention_is_ignored() -> None:
    event = _event("", subtype="file_share", files=[{"id": "F1", "name": "x.pdf", "size": 1}])
    assert _translate(event) is None


def test_workspace_keys_carry_the_enterprise_when_there_is_one() -> None:
    assert workspace_id("T1", None) == "T1"
    assert workspace_id("T1", "E1") == "E1/T1"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", Command("help")),
        ("help", Command("help")),
        ("list", Command("kb", ("list",), "list")),
        ("use handbook", Command("kb", ("use", "handbook"), "use handbook")),
        ("create handbook HR rules", Command("kb", ("create", "handbook", "HR", "rules"), "create handbook HR rules")),
        ("jobs", Command("jobs")),
        ("ingest https://example.com", Command("ingest", ("https://example.com",), "https://example.com")),
        ("how do I reset my password?", None),
    ],
)
def test_the_slash_commands_text_names_a_command_or_asks_a_question(text: str, expected: Command | None) -> None:
    assert slash_command(text, COMMANDS) == expected


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("jbos", "jbos"),
        ("/Lsit", "lsit"),
        ("vpn", "vpn"),
        ("jobs?", ""),
        ("when is lunch", ""),
        ("报销？", ""),
        ("", ""),
    ],
)
def test_only_one_word_that_is_no_question_may_be_a_mistyped_command(text: str, word: str) -> None:
    assert mistyped_word(text) == word
