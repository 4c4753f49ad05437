"""The manager reads a question's media before storing it: what was understood is the question, shown back first;
what was not is one line, with nothing stored; a conversation's order holds and other conversations go on."""

from __future__ import annotations

import asyncio

from bot.chat.media import MediaReader
from bot.types import Attachment, ConversationKey
from bot.words import messages
from tests.support.chat import RecordingTarget
from tests.unit.bot.chat.stand_ins import Parts, manager, message

OGG = b"OggS" + bytes(32)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(32)


class Speech:
    """Transcribes each file to the text it is named by; `gate` holds every transcription until it is set."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.gate = gate
        self.started = asyncio.Event()

    async def transcribe(self, data: bytes, name: str, mime_type: str) -> str:
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        return name.removesuffix(".ogg").replace("-", " ")


def _voice(said: str, seconds: float = 3.0) -> Attachment:
    async def read() -> bytes:
        return OGG

    return Attachment(f"{said.replace(' ', '-')}.ogg", len(OGG), "audio/ogg", read, seconds)


async def test_a_voice_message_without_a_transcription_model_gets_one_line_and_nothing_is_stored() -> None:
    parts = Parts()
    target = RecordingTarget()
    await manager(parts).handle(message("", attachments=(_voice("where is lunch"),)), target)
    assert target.replies() == [messages.no_transcription("en")]
    assert "TRANSCRIPTION_MODEL" in target.replies()[0]
    assert parts.conversations.messages == []
    assert parts.answerer.asked == []


async def test_a_transcribed_voice_message_is_shown_back_stored_and_answered_as_its_words() -> None:
    parts = Parts(media=MediaReader(transcriber=Speech()))
    target = RecordingTarget()
    await manager(parts).handle(message("", attachments=(_voice("where is lunch served"),)), target)
    assert target.replies()[0] == messages.media_heard("where is lunch served", "en")
    assert [question for question, _ in parts.answerer.asked] == ["where is lunch served"]
    stored = [m.text for m in parts.conversations.messages if m.role == "user"]
    assert stored == ["where is lunch served"]


async def test_a_conversation_keeps_its_order_while_its_voice_is_read_and_others_are_answered_meanwhile() -> None:
    gate = asyncio.Event()
    speech = Speech(gate)
    parts = Parts(media=MediaReader(transcriber=speech))
    chat = manager(parts)
    mine, theirs = RecordingTarget(), RecordingTarget()
    voice = asyncio.create_task(chat.handle(message("", attachments=(_voice("first question"),)), mine))
    await asyncio.wait_for(speech.started.wait(), 5)
    text = asyncio.create_task(chat.handle(message("second question"), mine))
    other = ConversationKey("test", "", "other-chat")
    await asyncio.wait_for(chat.handle(message("a question elsewhere", key=other), theirs), 5)
    assert [question for question, _ in parts.answerer.asked] == ["a question elsewhere"]
    gate.set()
    await asyncio.wait_for(asyncio.gather(voice, text), 5)
    assert [question for question, _ in parts.answerer.asked] == [
        "a question elsewhere",
        "first question",
        "second question",
    ]


async def test_an_image_nobody_can_read_here_names_the_setting() -> None:
    async def read() -> bytes:
        return PNG

    target = RecordingTarget()
    parts = Parts()
    await manager(parts).handle(
        message("what is this?", attachments=(Attachment("a.png", 40, "image/png", read),)), target
    )
    assert target.replies() == [messages.no_image_reader("en")]
    assert parts.answerer.asked == []
