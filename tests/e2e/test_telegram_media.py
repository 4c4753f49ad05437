"""Photos and voice messages as questions in Telegram: the real python-telegram-bot against the fake Bot API, the
real openai client against the fake transcription API, real Tesseract, Weaviate and the embedder."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio

from adapters.telegram.app import TelegramAdapter
from adapters.telegram.app import create as create_telegram
from adapters.telegram.render import to_telegram_html
from bot.app.manager import build_manager, chat_policy
from bot.app.services import Services, build_services
from bot.words import messages
from fakes.openai_api import FakeOpenAI
from fakes.telegram import FakeTelegramBotAPI, parse_html
from rag.ingest.documents import SourceFile
from tests.conftest import EmbeddedSettings
from tests.support.media import HANDBOOK, OGG, screenshot

# Seconds a voice message may take to be read here: the transcription the slow-model test holds runs past it.
MEDIA_TIMEOUT = 15


@dataclass
class Bot:
    services: Services
    telegram: FakeTelegramBotAPI
    openai: FakeOpenAI


def _user(user_id: int, name: str) -> dict[str, Any]:
    return {"id": user_id, "is_bot": False, "first_name": name}


USERS = {
    name: _user(8100 + n, name)
    for n, name in enumerate(["Ann", "Ben", "Cai", "Dan", "Eve", "Fay", "Gus", "Hal", "Ian"])
}


@pytest_asyncio.fixture(scope="module")
async def bot(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[Bot]:
    async with FakeTelegramBotAPI() as telegram, FakeOpenAI() as openai:
        settings = embedded_settings(
            tmp_path_factory.mktemp("telegram-media"),
            DEFAULT_KNOWLEDGE_BASES="handbook",
            TELEGRAM_BOT_TOKEN=telegram.token,
            TELEGRAM_ALLOWED_USERS=",".join(str(user["id"]) for user in USERS.values()),
            TELEGRAM_API_BASE_URL=telegram.base_url,
            TELEGRAM_FILE_BASE_URL=telegram.base_file_url,
            TRANSCRIPTION_MODEL="whisper-1",
            TRANSCRIPTION_BASE_URL=openai.base_url,
            TRANSCRIPTION_API_KEY="test-key",
            MEDIA_MAX_IMAGE_MB=1,
            MEDIA_MAX_AUDIO_SECONDS=600,
            MEDIA_TIMEOUT=MEDIA_TIMEOUT,
        )
        async with build_services(settings) as services:
            kb = await services.knowledge.create("handbook", {})
            await services.ingestor.ingest(kb, SourceFile(HANDBOOK, "upload:handbook.md", "handbook.md"))
            adapter = create_telegram(build_manager(services, chat_policy(settings)), settings, services.db)
            assert isinstance(adapter, TelegramAdapter)
            await adapter.start()
            try:
                yield Bot(services, telegram, openai)
            finally:
                await adapter.stop()


def _plain(markdown: str) -> str:
    return parse_html(to_telegram_html(markdown))[0]


async def _shown(fake: FakeTelegramBotAPI, chat_id: int, count: int, *, final: bool = True) -> list[str]:
    """The chat once it shows `count` bot messages (the last one a finished answer when `final`)."""

    def done() -> bool:
        shown = fake.bot_messages(chat_id)
        return len(shown) >= count and (not final or bool(shown[count - 1].reply_markup))

    try:
        await fake.wait_for(done, timeout=60)
    except TimeoutError as exc:
        exc.add_note(f"chat {chat_id} shows: {fake.visible(chat_id)}")
        raise
    return fake.visible(chat_id)


async def _question(bot: Bot, user: dict[str, Any]) -> str:
    conversation = await bot.services.conversations.resolve("telegram", "", str(user["id"]))
    stored = await bot.services.conversations.recent(conversation.id, 10)
    return next(message.text for message in stored if message.role == "user")


async def test_a_photo_with_a_caption_is_answered_from_the_text_read_in_it(bot: Bot) -> None:
    fake, ann = bot.telegram, USERS["Ann"]
    photo = fake.add_file(screenshot("Where is the VPN client installed from?"), "shot.png", "image/png")
    fake.queue_update(fake.photo_message(photo, caption="what is this about?", user=ann))
    read, answer = await _shown(fake, ann["id"], 2)
    assert read == "🖼 Read from the image: “Where is the VPN client installed from?”"
    assert "Software Center" in answer
    question = await _question(bot, ann)
    assert question == "what is this about?\n\nWhere is the VPN client installed from?"


async def test_a_40_megapixel_photo_is_read_within_its_bounds(bot: Bot) -> None:
    fake, ian = bot.telegram, USERS["Ian"]
    photo = screenshot("Where is the VPN client installed from?", size=(8000, 5000), font_size=200)
    assert len(photo) < 1_000_000  # under MEDIA_MAX_IMAGE_MB: OCR, not the size limit, is what bounds it
    fake.queue_update(fake.photo_message(fake.add_file(photo, "big.png", "image/png"), user=ian))
    read, answer = await _shown(fake, ian["id"], 2)
    assert read == "🖼 Read from the image: “Where is the VPN client installed from?”"
    assert "Software Center" in answer


async def test_a_voice_message_is_transcribed_shown_back_and_answered(bot: Bot) -> None:
    fake, ben = bot.telegram, USERS["Ben"]
    bot.openai.transcript = "When is lunch served?"
    voice = fake.add_file(OGG, "voice.ogg", "audio/ogg")
    fake.queue_update(fake.voice_message(voice, duration=3, user=ben))
    heard, answer = await _shown(fake, ben["id"], 2)
    assert heard == _plain(messages.media_heard("When is lunch served?", "en"))
    assert "noon" in answer
    (sent,) = [t for t in bot.openai.transcriptions if t.data == OGG]
    assert (sent.model, sent.content_type) == ("whisper-1", "audio/ogg")
    assert await _question(bot, ben) == "When is lunch served?"


async def test_an_hour_long_voice_message_is_refused_by_its_length_before_it_is_downloaded(bot: Bot) -> None:
    fake, cai = bot.telegram, USERS["Cai"]
    voice = fake.add_file(OGG + b"long", "long.ogg", "audio/ogg")
    fake.queue_update(fake.voice_message(voice, duration=3600, user=cai))
    (said,) = await _shown(fake, cai["id"], 1, final=False)
    assert said == _plain(messages.audio_too_long(3600, 600, "en"))
    assert not [call for call in fake.calls("getFile") if call.params.get("file_id") == voice]


async def test_a_silent_voice_message_is_told_nothing_was_heard(bot: Bot) -> None:
    fake, dan = bot.telegram, USERS["Dan"]
    silence = OGG + b"silence"
    bot.openai.transcript_for = lambda name, data: "" if data == silence else bot.openai.transcript
    try:
        fake.queue_update(fake.voice_message(fake.add_file(silence, "quiet.ogg", "audio/ogg"), duration=2, user=dan))
        (said,) = await _shown(fake, dan["id"], 1, final=False)
    finally:
        bot.openai.transcript_for = None
    assert said == _plain(messages.heard_nothing("en"))


@pytest.mark.parametrize(
    ("data", "size", "expected"),
    [
        (b"%PDF-1.7 this is no picture", None, lambda name: messages.not_an_image(name, "en")),
        (b"\x89PNG\r\n\x1a\n", 5_000_000, lambda name: messages.media_too_large(name, 5_000_000, 1_000_000, "en")),
    ],
    ids=["not-an-image", "huge-photo"],
)
async def test_a_bad_photo_gets_one_clear_line(bot: Bot, data: bytes, size: int | None, expected: Any) -> None:
    fake = bot.telegram
    user = USERS["Eve"] if size is None else USERS["Fay"]
    photo = fake.add_file(data, "photo.png", "image/png", size=size)
    update = fake.photo_message(photo, caption="what is this?", user=user)
    name = f"{update['message']['photo'][-1]['file_unique_id']}.jpg"
    fake.queue_update(update)
    (said,) = await _shown(fake, user["id"], 1, final=False)
    assert said == _plain(expected(name))
    if size is not None:  # refused by its size as Telegram announced it, never downloaded
        assert not [call for call in fake.calls("getFile") if call.params.get("file_id") == photo]


async def test_a_slow_transcription_keeps_no_other_conversation_waiting_and_ends_within_its_bound(bot: Bot) -> None:
    fake, gus, hal = bot.telegram, USERS["Gus"], USERS["Hal"]
    bot.openai.delay_next(120)  # the transcription of Gus's voice message hangs
    fake.queue_update(fake.voice_message(fake.add_file(OGG + b"slow", "slow.ogg", "audio/ogg"), user=gus))
    await bot.openai.wait_for(lambda: any(r.path.endswith("/audio/transcriptions") for r in bot.openai.requests))
    fake.queue_update(fake.private_message("How do I install the VPN client?", user=hal))
    (answer,) = await _shown(fake, hal["id"], 1)
    assert "Software Center" in answer
    assert fake.visible(gus["id"]) == []  # still waiting on its model while Hal was answered
    (said,) = await _shown(fake, gus["id"], 1, final=False)
    assert said == _plain(messages.media_too_slow("en"))
