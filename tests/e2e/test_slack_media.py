"""Screenshots and audio clips shared with the bot in Slack: signed events posted to ragbot's route, slack-bolt and
slack_sdk against the fake Web API, the real openai client against the fake transcription API, real Tesseract."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web

from adapters.slack.app import EVENTS_PATH, SlackAdapter
from adapters.slack.app import create as create_slack
from bot.app.manager import build_manager, chat_policy
from bot.app.services import Services, build_services
from bot.words import messages
from fakes.base import start_local
from fakes.openai_api import FakeOpenAI
from fakes.slack import FakeSlackAPI, Shown, events
from rag.ingest.documents import SourceFile
from tests.conftest import EmbeddedSettings
from tests.support.media import HANDBOOK, OGG, screenshot

SECRET = "test-signing-secret"
TEAM = "T0MEDIA"
TOKEN = "xoxb-media"
ADMIN = "U0ADMIN"
BOB = "U0BOB"


@dataclass
class Slack:
    services: Services
    fake: FakeSlackAPI
    openai: FakeOpenAI
    url: str

    async def share(
        self, channel: str, files: list[dict[str, Any]], text: str = "", user: str = BOB, *, mention: bool = False
    ) -> str:
        """A person shares files in a message as Slack delivers it (a DM's message event, or the app_mention event
        of a message that mentions the bot, which carries the files too); returns the message's ts."""
        ts = self.fake.user_message(TEAM, channel, user, text)
        if mention:
            event = events.app_mention(channel=channel, user=user, text=text, team=TEAM, ts=ts)
            event["files"] = files
        else:
            event = events.file_share(channel=channel, user=user, files=files, team=TEAM, ts=ts, text=text)
        body = events.json_body(events.envelope(event, team_id=TEAM))
        headers = events.signed_headers(body, SECRET, None, content_type="application/json")
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.url + EVENTS_PATH, data=body, headers=headers) as response,
        ):
            assert response.status == 200
        return ts

    def replies(self, channel: str, thread: str | None = None) -> list[Shown]:
        """The bot's messages in a DM itself, or in one thread of a channel."""
        shown = self.fake.visible(channel) if thread is None else self.fake.thread(channel, thread)
        return [m for m in shown if m.bot_id and (m.thread_ts is None if thread is None else m.ts != thread)]

    async def wait(self, channel: str, count: int, thread: str | None = None, *, answered: bool = True) -> list[str]:
        """The bot's messages once there are `count` (the last a finished answer when `answered`)."""

        def done() -> bool:
            shown = self.replies(channel, thread)
            last = shown[count - 1] if len(shown) >= count else None
            finished = last is not None and not last.streaming and (bool(last.blocks) or "Sources" in last.text)
            return last is not None and (not answered or finished)

        try:
            await self.fake.wait_for(done, timeout=60)
        except TimeoutError as exc:
            exc.add_note(f"{channel} {thread} shows: {self.replies(channel, thread)}")
            raise
        return [m.text for m in self.replies(channel, thread)]


@pytest_asyncio.fixture(scope="module")
async def slack(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[Slack]:
    async with FakeSlackAPI() as fake, FakeOpenAI() as openai:
        fake.add_workspace(TEAM, bot_token=TOKEN, bot_user_id=events.BOT_USER_ID, bot_id="B0MEDIA")
        settings = embedded_settings(
            tmp_path_factory.mktemp("slack-media"),
            DEFAULT_KNOWLEDGE_BASES="handbook",
            SLACK_BOT_TOKEN=TOKEN,
            SLACK_SIGNING_SECRET=SECRET,
            SLACK_ADMINS=ADMIN,
            SLACK_API_BASE_URL=fake.base_url,
            TRANSCRIPTION_MODEL="gpt-4o-mini-transcribe",
            TRANSCRIPTION_BASE_URL=openai.base_url,
            TRANSCRIPTION_API_KEY="test-key",
        )
        async with build_services(settings) as services:
            kb = await services.knowledge.create("handbook", {})
            await services.ingestor.ingest(kb, SourceFile(HANDBOOK, "upload:handbook.md", "handbook.md"))
            adapter = create_slack(build_manager(services, chat_policy(settings)), settings, services.db)
            assert isinstance(adapter, SlackAdapter)
            app = web.Application()
            adapter.mount(app)
            runner, port = await start_local(app)
            await services.jobs.start()
            await adapter.start()
            try:
                yield Slack(services, fake, openai, f"http://127.0.0.1:{port}")
            finally:
                await adapter.stop()
                await services.jobs.stop()
                await runner.cleanup()


async def test_a_screenshot_shared_in_a_dm_is_read_and_answered(slack: Slack) -> None:
    shot = slack.fake.add_file(
        TEAM, "error.png", screenshot("Where is the VPN client installed from?"), mimetype="image/png"
    )
    await slack.share("D0BOBSHOT", [shot], text="any idea?")
    read, answer = await slack.wait("D0BOBSHOT", 2)
    assert read == "🖼 Read from the image: “Where is the VPN client installed from?”"
    assert "Software Center" in answer
    assert await slack.services.job_repo.recent(limit=None) == []  # a question, not a file to ingest


async def test_an_audio_clip_shared_with_a_mention_is_heard_and_answered_in_its_thread(slack: Slack) -> None:
    slack.openai.transcript = "When is lunch served?"
    clip = slack.fake.add_file(TEAM, "clip.webm", OGG, mimetype="audio/webm", duration_ms=2500)
    thread = await slack.share("C0MEDIA", [clip], mention=True)
    heard, answer = await slack.wait("C0MEDIA", 2, thread)
    assert heard == messages.media_heard("When is lunch served?", "en")
    assert "noon" in answer
    assert [t.model for t in slack.openai.transcriptions if t.filename == "clip.webm"] == ["gpt-4o-mini-transcribe"]


async def test_an_hour_long_clip_is_refused_by_its_length_before_slack_is_asked_for_it(slack: Slack) -> None:
    clip = slack.fake.add_file(TEAM, "meeting.webm", OGG, mimetype="audio/webm", duration_ms=3_600_000)
    await slack.share("D0BOBLONG", [clip])
    (said,) = await slack.wait("D0BOBLONG", 1, answered=False)
    assert said == messages.audio_too_long(3600, 600, "en")
    assert [call for call in slack.fake.calls("files.info") if call.params.get("file") == clip["id"]] == []
