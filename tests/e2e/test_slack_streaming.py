"""Answers streamed into Slack threads through the real slack_sdk client and the fake Web API's limits:
native streaming (with expiry and 12,000-character splits) and edit mode's shared per-workspace budget."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
import pytest_asyncio
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.budget import Pacer
from adapters.slack.native import NativeReplyStream
from adapters.slack.render import MAX_MARKDOWN, feedback_block
from adapters.slack.reply import SlackTarget
from bot.metrics import ChatMetrics
from bot.ports import ReplyStream
from bot.types import Answer, SourceLink
from fakes.slack import FakeSlackAPI, Shown

TEAM = "T0STREAM"
CHANNEL = "C0STREAM"
TOKEN = "xoxb-stream"
SOURCES = (SourceLink(1, "handbook.md"), SourceLink(2, "VPN guide", url="https://example.com/vpn"))
SOURCES_LINE = "*Sources:* [1] handbook.md [2] <https://example.com/vpn|VPN guide>"


@dataclass
class Scene:
    fake: FakeSlackAPI
    client: AsyncWebClient
    metrics: ChatMetrics
    pacer: Pacer

    def target(self, thread_ts: str, *, native: bool = True) -> SlackTarget:
        return SlackTarget(
            self.client,
            CHANNEL,
            thread_ts,
            workspace=TEAM,
            pacer=self.pacer,
            observer=self.metrics.observer("slack"),
            recipient_user="U0ASKER",
            recipient_team=TEAM,
            native=native,
        )

    def question(self) -> str:
        return self.fake.user_message(TEAM, CHANNEL, "U0ASKER", "a question")

    def answers(self, thread_ts: str) -> list[Shown]:
        return [shown for shown in self.fake.thread(CHANNEL, thread_ts) if shown.bot_id]


@pytest_asyncio.fixture
async def scene() -> AsyncIterator[Scene]:
    async with FakeSlackAPI(stream_idle=3600) as fake:
        fake.add_workspace(TEAM, bot_token=TOKEN, bot_user_id="U0BOT", bot_id="B0BOT")
        yield Scene(fake, AsyncWebClient(token=TOKEN, base_url=fake.base_url), ChatMetrics(), Pacer())


async def _write(stream: ReplyStream, pieces: list[str]) -> None:
    for piece in pieces:
        await stream.push(piece)
        await asyncio.sleep(0)


async def test_a_native_stream_ends_with_the_answer_its_sources_and_feedback_buttons(scene: Scene) -> None:
    thread = scene.question()
    stream = scene.target(thread).open_stream()
    assert isinstance(stream, NativeReplyStream)
    await stream.status("searching")
    assert scene.fake.status(CHANNEL, thread) == "is searching the knowledge base…"
    await _write(stream, ["The VPN client ", "is installed from ", "the Software Center."])
    await scene.fake.wait_for(lambda: scene.fake.calls("chat.startStream"), timeout=10)
    ref = await stream.finish(Answer("The VPN client is installed from the Software Center.", SOURCES, message_id="m1"))
    (shown,) = scene.answers(thread)
    assert ref is not None
    assert ref.id == shown.ts
    assert shown.text == f"The VPN client is installed from the Software Center.\n{SOURCES_LINE}"
    assert not shown.streaming
    assert shown.blocks[-1] == feedback_block("m1")
    assert scene.fake.status(CHANNEL, thread) == ""
    started = scene.fake.calls("chat.startStream")[0].params
    assert (started["recipient_user_id"], started["recipient_team_id"]) == ("U0ASKER", TEAM)


async def test_a_stream_that_expires_mid_answer_is_completed_with_chat_update(scene: Scene) -> None:
    thread = scene.question()
    stream = scene.target(thread).open_stream()
    await stream.push("First half of the answer. ")
    await scene.fake.wait_for(lambda: scene.fake.calls("chat.startStream"), timeout=10)
    (started,) = scene.answers(thread)
    scene.fake.expire_stream(started.ts)
    await stream.push("Second half, written after Slack ended the stream.")
    text = "First half of the answer. Second half, written after Slack ended the stream."
    await stream.finish(Answer(text, SOURCES, message_id="m2"))
    (shown,) = scene.answers(thread)
    assert shown.ts == started.ts
    assert shown.text == f"{text}\n{SOURCES_LINE}"
    assert scene.fake.calls("chat.update")
    assert any(call.error == "message_not_in_streaming_state" for call in scene.fake.calls())


async def test_an_answer_over_12000_characters_continues_in_a_second_message(scene: Scene) -> None:
    thread = scene.question()
    stream = scene.target(thread).open_stream()
    paragraphs = [f"Paragraph {n}: " + "word " * 200 + "\n\n" for n in range(14)]
    await _write(stream, paragraphs)
    text = "".join(paragraphs).strip()
    await stream.finish(Answer(text, SOURCES, message_id="m3"))
    shown = scene.answers(thread)
    assert len(shown) == 2
    assert all(len(message.text) <= MAX_MARKDOWN + len(SOURCES_LINE) + 1 for message in shown)
    assert (shown[0].text + shown[1].text).replace("\n" + SOURCES_LINE, "") == text
    assert shown[1].text.endswith(SOURCES_LINE)


async def test_an_answer_that_changed_after_streaming_is_rewritten_in_place(scene: Scene) -> None:
    thread = scene.question()
    stream = scene.target(thread).open_stream()
    await stream.push("A draft the filter later replaced")
    await scene.fake.wait_for(lambda: scene.fake.calls("chat.startStream"), timeout=10)
    await stream.finish(Answer("The final answer.", SOURCES))
    (shown,) = scene.answers(thread)
    assert shown.text == f"The final answer.\n{SOURCES_LINE}"


async def test_a_429_on_append_delays_the_text_but_the_final_answer_arrives_whole(scene: Scene) -> None:
    scene.fake.fail_next(429, retry_after=1, times=3, method="chat.appendStream")
    thread = scene.question()
    stream = scene.target(thread).open_stream()
    await stream.push("one ")
    await scene.fake.wait_for(lambda: scene.fake.calls("chat.startStream"), timeout=10)
    for word in ["two ", "three ", "four"]:
        await stream.push(word)
        await scene.fake.wait_for(lambda: len(scene.fake.calls("chat.appendStream")) >= 1, timeout=10)
    await stream.finish(Answer("one two three four"))
    (shown,) = scene.answers(thread)
    assert shown.text == "one two three four"


@pytest.mark.parametrize(("native", "method"), [(True, "chat.startStream"), (False, "chat.postMessage")])
async def test_a_slack_server_error_is_counted_and_the_answer_still_arrives(
    scene: Scene, native: bool, method: str
) -> None:
    scene.fake.fail_next(500, times=2, method=method)
    thread = scene.question()
    stream = scene.target(thread, native=native).open_stream()
    await stream.push("The VPN client ")
    # Streaming meets the two failures, then shows the text.
    await scene.fake.wait_for(lambda: len(scene.fake.calls(method)) == 3, timeout=20)
    assert await asyncio.wait_for(stream.finish(Answer("The VPN client is installed.")), 30) is not None
    assert scene.answers(thread)[0].text.startswith("The VPN client is installed.")
    assert scene.metrics.sample("ragbot_platform_errors_total", platform="slack") == 2
    assert scene.metrics.sample("ragbot_chat_undelivered_total", platform="slack") == 0


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("fault", ["bot removed", "token revoked"])
async def test_a_revoked_token_or_a_removed_bot_ends_the_answer_quietly(scene: Scene, native: bool, fault: str) -> None:
    thread = scene.question()
    stream = scene.target(thread, native=native).open_stream()
    await stream.push("Half an answer")
    await scene.fake.wait_for(lambda: scene.answers(thread), timeout=10)
    if fault == "bot removed":
        scene.fake.remove_bot(TEAM, CHANNEL)
    else:
        scene.fake.revoke(TOKEN)
    await stream.push(" and the rest")
    assert await asyncio.wait_for(stream.finish(Answer("Half an answer and the rest")), 30) is None
    assert scene.metrics.sample("ragbot_chat_undelivered_total", platform="slack") == 1
    assert scene.answers(thread)[0].text == "Half an answer"


async def test_edit_mode_shares_one_budget_so_many_answers_finish_without_a_429(scene: Scene) -> None:
    threads = [scene.question() for _ in range(12)]
    streams = [scene.target(thread, native=False).open_stream() for thread in threads]

    async def answer(stream: ReplyStream, n: int) -> None:
        for word in range(20):
            await stream.push(f"word{word} ")
            await asyncio.sleep(0.05)
        await stream.finish(Answer(f"Answer {n}: " + "".join(f"word{w} " for w in range(20)).strip(), SOURCES))

    await asyncio.wait_for(asyncio.gather(*(answer(stream, n) for n, stream in enumerate(streams))), 120)
    for n, thread in enumerate(threads):
        (shown,) = scene.answers(thread)
        assert shown.text.startswith(f"Answer {n}: word0")
        assert shown.text.endswith(SOURCES_LINE)
    assert scene.fake.throttled == []
