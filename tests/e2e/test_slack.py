"""ragbot in Slack end to end: signed Events API and slash-command requests posted to ragbot's own aiohttp route,
slack-bolt and slack_sdk answering against the fake Web API, over real services (Weaviate, the embedder, SQLite)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web
from pydantic import SecretStr

from adapters.slack import words as slack_words
from adapters.slack.app import EVENTS_PATH, SlackAdapter
from adapters.slack.app import create as create_slack
from adapters.slack.render import FEEDBACK_ACTION
from adapters.slack.translate import command_style
from bot.app.manager import build_manager, chat_policy
from bot.app.services import Services, build_services
from bot.app.settings import Settings
from bot.chat.manager import ConversationManager
from bot.chat.recovery import TurnRecovery
from bot.words import messages
from fakes.slack import FakeSlackAPI, Shown, events
from harness.processes import free_port
from rag.ingest.documents import SourceFile
from tests.conftest import EmbeddedSettings
from tests.support.documents import make_xlsx
from tests.support.held_store import HeldStore

SECRET = "test-signing-secret"
TEAM = "T0ACME"
TOKEN = "xoxb-acme"
ADMIN = "U0ADMIN"
BOB = "U0BOB"
CHANNEL = "C0GENERAL"
HANDBOOK = (
    b"# VPN\n\nThe VPN client is installed from the Software Center. It connects with your badge number.\n\n"
    b"# Lunch\n\nLunch is served from noon in the atrium on the second floor.\n"
)
SOURCES_LINE = "*Sources:* [1] handbook.md"
SLACK_STYLE = command_style("/kb")
STATUS = "assistant.threads.setStatus"


@dataclass
class Slack:
    services: Services
    fake: FakeSlackAPI
    adapter: SlackAdapter
    url: str
    manager: ConversationManager
    settings: Settings

    async def post(
        self,
        payload: dict[str, Any],
        *,
        retry: int | None = None,
        secret: str = SECRET,
        timestamp: int | None = None,
        form: bool = False,
    ) -> tuple[int, str]:
        """POST a signed delivery to ragbot's /slack/events as Slack would."""
        if form:
            body = events.form_body(payload)
        elif payload.get("type") == "block_actions":
            body, form = events.interactive_body(payload), True
        else:
            body = events.json_body(payload)
        content_type = "application/x-www-form-urlencoded" if form else "application/json"
        headers = events.signed_headers(body, secret, timestamp, content_type=content_type, retry_num=retry)
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.url + EVENTS_PATH, data=body, headers=headers) as response,
        ):
            return response.status, await response.text()

    async def mention(self, text: str, *, user: str = BOB, channel: str = CHANNEL, **fields: Any) -> str:
        """Mention the bot in a channel; returns the mention's ts (the answer's thread)."""
        ts = self.fake.user_message(TEAM, channel, user, f"<@{events.BOT_USER_ID}> {text}", **fields)
        event = events.app_mention(channel=channel, user=user, text=text, team=TEAM, ts=ts, **fields)
        status, _ = await self.post(events.envelope(event, team_id=TEAM))
        assert status == 200
        return str(event["ts"])

    async def say(self, text: str, *, user: str = BOB, channel: str = CHANNEL, **fields: Any) -> dict[str, Any]:
        """A person's message event (DM, thread reply, chatter); returns the event."""
        ts = self.fake.user_message(TEAM, channel, user, text, **fields)
        event = events.message(channel=channel, user=user, text=text, team=TEAM, ts=ts, **fields)
        status, _ = await self.post(events.envelope(event, team_id=TEAM))
        assert status == 200
        return event

    def bot_replies(self, channel: str, thread_ts: str) -> list[Shown]:
        """The bot's messages in a thread (its root excluded: that may be the bot's own post of a question)."""
        return [shown for shown in self.fake.thread(channel, thread_ts) if shown.bot_id and shown.ts != thread_ts]

    def dm_replies(self, channel: str) -> list[Shown]:
        """The bot's messages in a DM itself (none in threads: those are no answers in the DM)."""
        return [shown for shown in self.fake.visible(channel) if shown.bot_id and shown.thread_ts is None]

    async def dm_answers(self, channel: str, count: int = 1) -> list[str]:
        """Wait until the DM itself shows `count` finished bot answers."""
        return await self._finished(lambda: self.dm_replies(channel), count)

    async def answers(self, channel: str, thread_ts: str, count: int = 1) -> list[str]:
        """Wait until the thread shows `count` finished bot answers (sources or buttons under them)."""
        return await self._finished(lambda: self.bot_replies(channel, thread_ts), count)

    async def _finished(self, replies: Callable[[], list[Shown]], count: int) -> list[str]:
        def done() -> bool:
            shown = replies()
            return len(shown) >= count and all(
                not message.streaming and (message.blocks or "Sources" in message.text) for message in shown[:count]
            )

        await self.fake.wait_for(done, timeout=60)
        return [message.text for message in replies()]


async def _serve(adapter: SlackAdapter) -> tuple[web.AppRunner, str]:
    app = web.Application()
    adapter.mount(app)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}"


@pytest_asyncio.fixture(scope="module")
async def slack(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[Slack]:
    async with FakeSlackAPI() as fake:
        fake.add_workspace(TEAM, bot_token=TOKEN, bot_user_id=events.BOT_USER_ID, bot_id="B0ACME")
        settings = embedded_settings(
            tmp_path_factory.mktemp("slack"),
            DEFAULT_KNOWLEDGE_BASES="handbook",
            SLACK_BOT_TOKEN=TOKEN,
            SLACK_SIGNING_SECRET=SECRET,
            SLACK_ADMINS=ADMIN,
            SLACK_API_BASE_URL=fake.base_url,
        )
        async with build_services(settings) as services:
            kb = await services.knowledge.create("handbook", {})
            await services.ingestor.ingest(kb, SourceFile(HANDBOOK, "upload:handbook.md", "handbook.md"))
            manager = build_manager(services, chat_policy(settings))
            adapter = create_slack(manager, settings, services.db)
            assert isinstance(adapter, SlackAdapter)
            runner, url = await _serve(adapter)
            await services.jobs.start()
            await adapter.start()
            try:
                yield Slack(services, fake, adapter, url, manager, settings)
            finally:
                await adapter.stop()
                await services.jobs.stop()
                await runner.cleanup()


async def _last_answer(services: Services, key: tuple[str, str, str, str]) -> Any:
    """The conversation's last answer once its turn is stored (right after the chat shows it)."""
    conversation = await services.conversations.find(*key)
    assert conversation is not None

    async def stored() -> Any:
        while True:
            found = await services.conversations.recent(conversation.id, 20)
            if found and found[-1].role == "assistant" and found[-1].status == "done":
                return found[-1]
            await asyncio.sleep(0.05)

    return await asyncio.wait_for(stored(), 10)


async def test_slack_checks_the_url_and_refuses_unsigned_or_stale_requests(slack: Slack) -> None:
    status, body = await slack.post(events.url_verification("challenge-123"))
    assert (status, json.loads(body)) == (200, {"challenge": "challenge-123"})
    event = events.app_mention(channel="C0FORGED", user=BOB, text="How do I install the VPN client?", team=TEAM)
    forged, _ = await slack.post(events.envelope(event, team_id=TEAM), secret="not-the-secret")
    stale, _ = await slack.post(events.envelope(event, team_id=TEAM), timestamp=int(time.time()) - 600)
    assert (forged, stale) == (401, 401)
    await slack.mention("When is lunch served?", channel="C0AFTER")
    assert slack.fake.visible("C0FORGED") == []


async def test_a_channel_mention_is_answered_in_its_thread_with_sources_and_feedback(slack: Slack) -> None:
    thread = await slack.mention("How do I install the VPN client?")
    (shown,) = await slack.answers(CHANNEL, thread)
    answer = await _last_answer(slack.services, ("slack", TEAM, CHANNEL, thread))
    assert "Software Center" in answer.text
    assert shown == f"{answer.text}\n{SOURCES_LINE}"
    reply = slack.bot_replies(CHANNEL, thread)[0]
    assert answer.platform_message_id == reply.ts
    assert any(call.params.get("status") for call in slack.fake.calls("assistant.threads.setStatus"))
    assert any(block["type"] == "context_actions" for block in reply.blocks)
    await _press(slack, CHANNEL, reply, f"up:{answer.id}")
    # The answer keeps its text and sources, and shows the choice where the buttons were.
    await slack.fake.wait_for(lambda: slack.fake.message(CHANNEL, reply.ts).edits > reply.edits, timeout=10)
    rated = slack.fake.message(CHANNEL, reply.ts)
    assert rated.text == f"{answer.text}\n{SOURCES_LINE}\n{messages.feedback_thanks('up', 'en')}"
    assert not [block for block in rated.blocks if block["type"] == "context_actions"]
    assert (await slack.services.conversations.message(answer.id)).feedback == "up"


async def _press(slack: Slack, channel: str, reply: Shown, value: str, user: str = BOB) -> str:
    """Press a feedback button under a bot message, as Slack delivers the click; returns its response_url."""
    hook = slack.fake.response_url(team_id=TEAM, channel=channel, user=user)
    message = {
        "type": "message",
        "ts": reply.ts,
        "thread_ts": reply.thread_ts,
        "user": events.BOT_USER_ID,
        "text": reply.text,
        "blocks": reply.blocks,
    }
    click = events.block_actions(
        action_id=FEEDBACK_ACTION,
        value=value,
        user=user,
        team_id=TEAM,
        channel=channel,
        message_ts=reply.ts,
        response_url=hook,
        message=message,
    )
    status, _ = await slack.post(click)
    assert status == 200
    return hook


async def test_a_rated_answer_in_a_dm_answered_by_edits_shows_the_choice_in_the_chats_language(slack: Slack) -> None:
    assert await _ephemeral_reply(slack, "lang zh", channel="D0RATE") == messages.language_set("zh")
    await slack.say("How do I install the VPN client?", channel="D0RATE")
    await slack.dm_answers("D0RATE")
    (reply,) = slack.dm_replies("D0RATE")
    answer = await _last_answer(slack.services, ("slack", TEAM, "D0RATE", ""))
    await _press(slack, "D0RATE", reply, f"down:{answer.id}")
    await slack.fake.wait_for(lambda: slack.fake.message("D0RATE", reply.ts).edits > reply.edits, timeout=10)
    rated = slack.fake.message("D0RATE", reply.ts)
    assert rated.text.startswith(answer.text)
    assert rated.text.endswith(messages.feedback_thanks("down", "zh"))


async def test_a_refusal_carries_no_feedback_buttons(slack: Slack) -> None:
    thread = await slack.mention("???", channel="C0REFUSE")
    await slack.fake.wait_for(lambda: slack.bot_replies("C0REFUSE", thread), timeout=30)
    await slack.fake.wait_for(lambda: not slack.bot_replies("C0REFUSE", thread)[0].streaming, timeout=30)
    (reply,) = slack.bot_replies("C0REFUSE", thread)
    assert reply.text == messages.refusal("no_words", "en")
    assert not [block for block in reply.blocks if block["type"] == "context_actions"]


async def test_a_thread_reply_continues_the_conversation_and_chatter_is_left_alone(slack: Slack) -> None:
    await slack.say("lunch was great today", channel="C0TEAM")
    thread = await slack.mention("How do I install the VPN client?", channel="C0TEAM")
    await slack.answers("C0TEAM", thread)
    await slack.say("How does it connect?", channel="C0TEAM", thread_ts=thread)
    shown = await slack.answers("C0TEAM", thread, 2)
    assert "badge number" in shown[1]
    follow_up = await _last_answer(slack.services, ("slack", TEAM, "C0TEAM", thread))
    assert "vpn" in follow_up.meta["rewritten"].lower()
    assert [m for m in slack.fake.visible("C0TEAM") if m.bot_id and m.thread_ts != thread] == []


async def test_direct_messages_are_one_conversation_answered_in_the_dm_itself(slack: Slack) -> None:
    first = await slack.say("How do I install the VPN client?", channel="D0BOB")
    (shown,) = await slack.dm_answers("D0BOB")
    assert "Software Center" in shown
    assert shown.endswith(SOURCES_LINE)
    await slack.say("How does it connect?", channel="D0BOB")
    shown = await slack.dm_answers("D0BOB", 2)
    assert "badge number" in shown[1]
    # Nothing is threaded under the questions, and the follow-up was read with the first question as history.
    assert slack.bot_replies("D0BOB", str(first["ts"])) == []
    follow_up = await _last_answer(slack.services, ("slack", TEAM, "D0BOB", ""))
    assert "vpn" in follow_up.meta["rewritten"].lower()


async def test_a_retried_event_is_answered_once(slack: Slack) -> None:
    ts = slack.fake.user_message(TEAM, "C0RETRY", BOB, "When is lunch served?")
    event = events.app_mention(channel="C0RETRY", user=BOB, text="When is lunch served?", team=TEAM, ts=ts)
    delivery = events.envelope(event, team_id=TEAM)
    assert (await slack.post(delivery))[0] == 200
    assert (await slack.post(delivery, retry=1))[0] == 200
    # The same message also arrives as a plain message event (message.channels) under another event id.
    same_message = {**event, "type": "message", "channel_type": "channel"}
    assert (await slack.post(events.envelope(same_message, team_id=TEAM)))[0] == 200
    await slack.answers("C0RETRY", str(event["ts"]))
    later = await slack.mention("How do I install the VPN client?", channel="C0RETRY")
    await slack.answers("C0RETRY", later)
    assert len(slack.bot_replies("C0RETRY", str(event["ts"]))) == 1


async def _posted_once_stored(
    slack: Slack, monkeypatch: pytest.MonkeyPatch, payload: dict[str, Any], *, form: bool = False
) -> None:
    """POST `payload` while its question's store is held: Slack hears nothing until the store is done."""
    async with HeldStore(slack.services, monkeypatch) as held:
        posting = asyncio.create_task(slack.post(payload, form=form))
        await asyncio.wait_for(held.storing.wait(), 10)
        done, _ = await asyncio.wait({posting}, timeout=1.0)
        assert not done, "Slack heard the delivery arrived before its question was stored"
        held.release.set()
        status, _ = await asyncio.wait_for(posting, 10)
        assert status == 200
        assert held.stored.is_set()


async def test_a_mention_is_acknowledged_only_once_its_question_is_stored(
    slack: Slack, monkeypatch: pytest.MonkeyPatch
) -> None:
    ts = slack.fake.user_message(TEAM, "C0STORED", BOB, "When is lunch served?")
    event = events.app_mention(channel="C0STORED", user=BOB, text="When is lunch served?", team=TEAM, ts=ts)
    await _posted_once_stored(slack, monkeypatch, events.envelope(event, team_id=TEAM))
    (shown,) = await slack.answers("C0STORED", ts)
    assert "noon" in shown


async def test_a_question_asked_with_the_slash_command_is_acknowledged_only_once_it_is_stored(
    slack: Slack, monkeypatch: pytest.MonkeyPatch
) -> None:
    fields, _ = _command(slack, "When is lunch served?", channel="C0STOREDCMD")
    await _posted_once_stored(slack, monkeypatch, fields, form=True)
    (root,) = [m for m in slack.fake.visible("C0STOREDCMD") if m.thread_ts in (None, m.ts)]
    (shown,) = await slack.answers("C0STOREDCMD", root.ts)
    assert "noon" in shown


async def test_a_store_slower_than_slacks_three_seconds_is_acknowledged_in_time_and_still_answered(
    slack: Slack, monkeypatch: pytest.MonkeyPatch
) -> None:
    ts = slack.fake.user_message(TEAM, "C0SLOWSTORE", BOB, "How do I install the VPN client?")
    event = events.app_mention(
        channel="C0SLOWSTORE", user=BOB, text="How do I install the VPN client?", team=TEAM, ts=ts
    )
    async with HeldStore(slack.services, monkeypatch) as held:
        status, _ = await asyncio.wait_for(slack.post(events.envelope(event, team_id=TEAM)), 10)
        assert status == 200
        assert not held.stored.is_set()  # told "received" while the store still waits, or Slack would send again
    (shown,) = await slack.answers("C0SLOWSTORE", ts)
    assert "Software Center" in shown


async def test_an_admins_file_is_ingested_with_progress_and_then_answerable(slack: Slack) -> None:
    file = slack.fake.add_file(
        TEAM, "parking.md", b"# Parking\n\nVisitors park in the Marigold garage.", mimetype="text/markdown"
    )
    ts = slack.fake.user_message(TEAM, "D0ADMIN", ADMIN, "")
    event = events.file_share(channel="D0ADMIN", user=ADMIN, files=[file], team=TEAM, ts=ts)
    assert (await slack.post(events.envelope(event, team_id=TEAM)))[0] == 200
    await slack.fake.wait_for(
        lambda: any("parking.md: indexed" in m.text for m in slack.dm_replies("D0ADMIN")), timeout=60
    )
    (status,) = slack.dm_replies("D0ADMIN")
    assert "parking.md" in status.text
    assert status.edits >= 1
    await slack.say("Where do visitors park?", channel="D0ADMIN", user=ADMIN)
    await slack.fake.wait_for(lambda: any(m.blocks for m in slack.dm_replies("D0ADMIN")[1:]), timeout=60)
    assert "Marigold" in slack.dm_replies("D0ADMIN")[1].text


async def test_an_admins_faq_sheet_is_imported_as_faqs_not_indexed_as_a_document(slack: Slack) -> None:
    sheet = make_xlsx({"FAQ": [["question", "answer"], ["Who waters the plants?", "Facilities, on Mondays."]]})
    file = slack.fake.add_file(TEAM, "plants.xlsx", sheet, mimetype="application/vnd.ms-excel")
    ts = slack.fake.user_message(TEAM, "D0ADMIN", ADMIN, "")
    event = events.file_share(channel="D0ADMIN", user=ADMIN, files=[file], team=TEAM, ts=ts)
    assert (await slack.post(events.envelope(event, team_id=TEAM)))[0] == 200
    expected = "plants.xlsx: FAQ sheet imported: 1 added, 0 updated, 0 unchanged."
    await slack.fake.wait_for(lambda: any(m.text == expected for m in slack.dm_replies("D0ADMIN")), timeout=60)
    assert "plants.xlsx" not in [document.title for document in await slack.services.knowledge.documents("handbook")]


async def test_a_non_admins_file_is_refused_and_a_bare_mention_gets_a_hint(slack: Slack) -> None:
    file = slack.fake.add_file(TEAM, "secret.md", b"# Secret\n\nnothing", mimetype="text/markdown")
    ts = slack.fake.user_message(TEAM, "D0BOB2", BOB, "")
    event = events.file_share(channel="D0BOB2", user=BOB, files=[file], team=TEAM, ts=ts)
    await slack.post(events.envelope(event, team_id=TEAM))
    await slack.fake.wait_for(lambda: slack.dm_replies("D0BOB2"), timeout=30)
    replies = [m.text for m in slack.dm_replies("D0BOB2")]
    assert replies == [messages.files_admins_only("en")]  # no /ingest the person never typed
    assert [call for call in slack.fake.calls("files.info") if call.params.get("file") == file["id"]] == []
    thread = await slack.mention("", channel="C0HINT")
    await slack.fake.wait_for(lambda: slack.bot_replies("C0HINT", thread), timeout=30)
    assert [m.text for m in slack.bot_replies("C0HINT", thread)] == [slack_words.empty_mention("en", SLACK_STYLE)]


@pytest.mark.parametrize(
    ("name", "fields", "expected"),
    [
        ("locked.pdf", {"downloadable": False}, slack_words.file_login_page("locked.pdf", "en")),
        (
            "huge.pdf",
            {"size": 900_000_000},
            "huge.pdf is 900 MB, over the 50 MB limit for files. An admin of the server",
        ),
    ],
)
async def test_a_file_the_bot_cannot_download_is_explained_and_nothing_is_ingested(
    slack: Slack, name: str, fields: dict[str, Any], expected: str
) -> None:
    channel = f"D0FILE{len(name)}"
    file = slack.fake.add_file(TEAM, name, b"%PDF-1.4 not really", mimetype="application/pdf", **fields)
    ts = slack.fake.user_message(TEAM, channel, ADMIN, "")
    event = events.file_share(channel=channel, user=ADMIN, files=[file], team=TEAM, ts=ts)
    jobs_before = len(await slack.services.job_repo.recent(limit=None))
    await slack.post(events.envelope(event, team_id=TEAM))
    await slack.fake.wait_for(lambda: any(m.text.startswith(expected) for m in slack.dm_replies(channel)), timeout=30)
    # One status message, which ends saying why: nothing is left saying "Queued".
    assert [m.text[: len(expected)] for m in slack.dm_replies(channel)] == [expected]
    assert len(await slack.services.job_repo.recent(limit=None)) == jobs_before


async def test_a_file_slack_will_not_give_is_explained_in_the_chats_language(slack: Slack) -> None:
    assert await _ephemeral_reply(slack, "lang zh", ADMIN, channel="D0FILEZH") == messages.language_set("zh")
    file = slack.fake.add_file(TEAM, "locked.pdf", b"%PDF-1.4", mimetype="application/pdf", downloadable=False)
    ts = slack.fake.user_message(TEAM, "D0FILEZH", ADMIN, "")
    event = events.file_share(channel="D0FILEZH", user=ADMIN, files=[file], team=TEAM, ts=ts)
    await slack.post(events.envelope(event, team_id=TEAM))
    expected = slack_words.file_login_page("locked.pdf", "zh")
    await slack.fake.wait_for(lambda: [m.text for m in slack.dm_replies("D0FILEZH")] == [expected], timeout=30)


async def test_a_late_mention_reads_the_thread_once_as_history(slack: Slack) -> None:
    root = slack.fake.user_message(TEAM, "C0LATE", ADMIN, "Our VPN client keeps asking me for something")
    slack.fake.user_message(TEAM, "C0LATE", BOB, "same here, no idea what it wants", thread_ts=root)
    await slack.mention("how does it connect?", channel="C0LATE", thread_ts=root)
    shown = await slack.answers("C0LATE", root)
    assert "badge number" in shown[0]
    assert len(slack.fake.calls("conversations.replies")) == 1
    answer = await _last_answer(slack.services, ("slack", TEAM, "C0LATE", root))
    assert "vpn" in answer.meta["rewritten"].lower()
    await slack.mention("and when is lunch served?", channel="C0LATE", thread_ts=root)
    await slack.answers("C0LATE", root, 2)
    assert len(slack.fake.calls("conversations.replies")) == 1


def _command(slack: Slack, text: str, user: str = BOB, channel: str = CHANNEL) -> tuple[dict[str, str], str]:
    hook = slack.fake.response_url(team_id=TEAM, channel=channel, user=user)
    fields = events.slash_command(
        command="/kb", text=text, user_id=user, channel_id=channel, team_id=TEAM, response_url=hook
    )
    return fields, hook


async def _ephemeral_reply(slack: Slack, text: str, user: str = BOB, channel: str = CHANNEL) -> str:
    fields, hook = _command(slack, text, user, channel)
    status, _ = await slack.post(fields, form=True)
    assert status == 200
    await slack.fake.wait_for(lambda: slack.fake.responses(hook), timeout=30)
    (post,) = slack.fake.responses(hook)
    assert post.body["response_type"] == "ephemeral"
    return str(post.body["blocks"][0]["text"])


@pytest.mark.parametrize(
    ("text", "user", "expected"),
    [
        ("", BOB, lambda reply: "`/kb help`" in reply and "ingest" not in reply),
        ("help", ADMIN, lambda reply: "`/kb ingest" in reply),
        ("list", BOB, lambda reply: "handbook" in reply),
        (
            "ingest https://example.com/page",
            BOB,
            lambda reply: reply == messages.admins_only("ingest", "en", SLACK_STYLE),
        ),
    ],
)
async def test_the_slash_command_runs_commands_for_the_person_alone(
    slack: Slack, text: str, user: str, expected: Callable[[str], bool]
) -> None:
    assert expected(await _ephemeral_reply(slack, text, user))


@pytest.mark.parametrize("user", [BOB, ADMIN])
async def test_help_shows_commands_as_slack_writes_them_and_how_files_reach_the_bot(slack: Slack, user: str) -> None:
    reply = await _ephemeral_reply(slack, "help", user)
    usages = re.findall(r"^- `([^`]*)`", reply, flags=re.MULTILINE)
    assert usages
    # Every form is something a person can type into Slack: after the one slash command, and without files.
    assert all(usage.startswith("/kb") for usage in usages), usages
    assert all(form.startswith("/kb ") for usage in usages for form in usage.split(" | ") if form != "/kb"), usages
    assert {"/kb help", "/kb new", "/kb sources"} <= set(usages)
    assert "/kb list | /kb info [NAME]" in usages or user == ADMIN
    assert messages.form_usage("ingest", "files", "/kb ingest", "en") not in reply
    assert not [usage for usage in usages if "import" in usage]
    note = messages.files_note("en", SLACK_STYLE)
    assert (note in reply) == (user == ADMIN)


async def test_refusals_name_the_command_as_slack_writes_it(slack: Slack) -> None:
    assert await _ephemeral_reply(slack, "jobs") == messages.admins_only("jobs", "en", SLACK_STYLE)
    assert "/kb jobs" in messages.admins_only("jobs", "en", SLACK_STYLE)
    assert await _ephemeral_reply(slack, "faq import", ADMIN) == messages.no_faq_sheet("en", SLACK_STYLE)
    assert await _ephemeral_reply(slack, "ingest", ADMIN) == messages.nothing_to_ingest("en", SLACK_STYLE)


async def test_a_sheet_shared_with_the_words_faq_import_imports_its_questions(slack: Slack) -> None:
    sheet = b"question,answer\nWhere is the gym?,In the basement.\n"
    file = slack.fake.add_file(TEAM, "faq.csv", sheet, mimetype="text/csv")
    ts = slack.fake.user_message(TEAM, "D0ADMINFAQ", ADMIN, "faq import")
    event = events.file_share(channel="D0ADMINFAQ", user=ADMIN, files=[file], team=TEAM, ts=ts, text="faq import")
    assert (await slack.post(events.envelope(event, team_id=TEAM)))[0] == 200
    expected = "faq.csv: FAQ sheet imported: 1 added, 0 updated, 0 unchanged."
    await slack.fake.wait_for(lambda: any(m.text == expected for m in slack.fake.visible("D0ADMINFAQ")), timeout=60)


@pytest.mark.parametrize(
    ("text", "user", "suggestion"),
    [("jbos", ADMIN, "/kb jobs"), ("lsit", BOB, "/kb list"), ("HLEP", BOB, "/kb help")],
)
async def test_a_mistyped_subcommand_gets_a_private_did_you_mean_and_nothing_is_posted(
    slack: Slack, text: str, user: str, suggestion: str
) -> None:
    channel = f"C0TYPO{text.upper()}"
    fields, hook = _command(slack, text, user, channel=channel)
    assert (await slack.post(fields, form=True))[0] == 200
    await slack.fake.wait_for(lambda: slack.fake.responses(hook), timeout=30)
    (post,) = slack.fake.responses(hook)
    assert post.body["response_type"] == "ephemeral"
    reply = str(post.body["blocks"][0]["text"])
    assert reply == messages.unknown_command(text.lower(), "en", SLACK_STYLE, suggestion=suggestion)
    assert f"`{suggestion}`" in reply
    assert slack.fake.visible(channel) == []


async def test_one_word_like_no_command_is_still_asked_in_the_channel(slack: Slack) -> None:
    fields, _ = _command(slack, "lunch", channel="C0ONEWORD")
    assert (await slack.post(fields, form=True))[0] == 200
    await slack.fake.wait_for(lambda: slack.fake.visible("C0ONEWORD"), timeout=30)
    (root,) = [m for m in slack.fake.visible("C0ONEWORD") if m.thread_ts in (None, m.ts)]
    (shown,) = await slack.answers("C0ONEWORD", root.ts)
    assert "noon" in shown


async def test_new_stop_and_sources_act_on_the_thread_the_person_last_asked_in_and_say_which(slack: Slack) -> None:
    channel, dora = "C0THREADS", "U0DORA"  # Bob's questions are counted against his rate limit by other tests
    vpn = await slack.mention("How do I install the VPN client?", channel=channel, user=dora)
    await slack.answers(channel, vpn)
    lunch = await slack.mention("When is lunch served?", channel=channel, user=dora)
    await slack.answers(channel, lunch)
    # Slack sends a slash command from no thread: the one Dora last asked in is the one she means, and is named.
    about = messages.about_question("When is lunch served?", "en")
    sources = await _ephemeral_reply(slack, "sources", dora, channel)
    assert sources.startswith(f"{about}\n\n")
    assert "noon" in sources
    assert await _ephemeral_reply(slack, "new", dora, channel) == f"{about}\n\n{messages.new_conversation('en')}"
    conversations = slack.services.conversations
    lunch_thread = await conversations.find("slack", TEAM, channel, lunch)
    vpn_thread = await conversations.find("slack", TEAM, channel, vpn)
    assert lunch_thread is not None
    assert vpn_thread is not None
    assert lunch_thread.reset_at is not None
    assert vpn_thread.reset_at is None
    # Someone who asked nothing in this channel has no conversation there: nothing is stopped or shown for them.
    assert await _ephemeral_reply(slack, "stop", user=ADMIN, channel=channel) == messages.nothing_to_stop("en")
    assert await _ephemeral_reply(slack, "sources", user=ADMIN, channel=channel) == messages.no_sources("en")


# The question, its language, and what its answer says (a Chinese question over the English handbook finds nothing).
ASKED = [("When is lunch served?", "en", "noon"), ("午餐几点开始？", "zh", messages.no_answer("zh"))]


@pytest.mark.parametrize(("question", "lang", "answered"), ASKED)
async def test_a_question_asked_with_the_slash_command_is_answered_in_a_thread_of_its_own_in_its_language(
    slack: Slack, question: str, lang: str, answered: str
) -> None:
    channel = f"C0ASK{lang.upper()}"
    fields, _ = _command(slack, question, channel=channel)
    assert (await slack.post(fields, form=True))[0] == 200
    await slack.fake.wait_for(lambda: slack.fake.visible(channel), timeout=30)
    (root,) = [m for m in slack.fake.visible(channel) if m.thread_ts in (None, m.ts)]
    assert root.text == slack_words.asked(BOB, question, lang)
    (shown,) = await slack.answers(channel, root.ts)
    assert answered in shown
    statuses = {call.params.get("thread_ts"): call.params.get("status") for call in slack.fake.calls(STATUS)}
    assert statuses[root.ts] == slack_words.status(lang)


@pytest.mark.parametrize(("question", "lang"), [(question, lang) for question, lang, _ in ASKED])
async def test_a_question_in_a_channel_the_bot_is_not_in_is_explained_in_its_language(
    slack: Slack, question: str, lang: str
) -> None:
    channel = f"C0NOTIN{lang.upper()}"
    slack.fake.remove_bot(TEAM, channel)
    fields, hook = _command(slack, question, channel=channel)
    assert (await slack.post(fields, form=True))[0] == 200
    await slack.fake.wait_for(lambda: slack.fake.responses(hook), timeout=30)
    assert slack.fake.responses(hook)[0].body["blocks"][0]["text"] == slack_words.not_in_channel(lang)


async def test_socket_mode_answers_over_the_websocket_and_a_redelivery_once(slack: Slack) -> None:
    slack.fake.add_app_token("xapp-socket")
    settings = slack.settings.model_copy(
        update={"SLACK_APP_TOKEN": SecretStr("xapp-socket"), "SLACK_SIGNING_SECRET": None}
    )
    adapter = create_slack(slack.manager, settings, slack.services.db)
    assert isinstance(adapter, SlackAdapter)
    await adapter.start()
    try:
        ts = slack.fake.user_message(TEAM, "C0SOCKET", BOB, f"<@{events.BOT_USER_ID}> When is lunch served?")
        event = events.app_mention(channel="C0SOCKET", user=BOB, text="When is lunch served?", team=TEAM, ts=ts)
        delivery = events.envelope(event, team_id=TEAM)
        ack = await slack.fake.socket_push("events_api", delivery)
        assert ack["envelope_id"]
        await slack.fake.socket_push("events_api", delivery, retry_attempt=1, retry_reason="timeout")
        (shown,) = await slack.answers("C0SOCKET", ts)
        assert "noon" in shown
    finally:
        await adapter.stop()
    assert len(slack.bot_replies("C0SOCKET", ts)) == 1


async def test_an_answer_whose_process_died_is_written_again_in_its_thread_in_a_message_that_says_so(
    slack: Slack,
) -> None:
    conversations = slack.services.conversations
    thread = slack.fake.user_message(TEAM, "C0RESUME", BOB, "When is lunch served?")
    conversation = await conversations.resolve("slack", TEAM, "C0RESUME", thread)
    # Another process stored the question and died while it answered (kill -9): its answer is still `streaming`.
    await conversations.open_turn(
        conversation.id, "dead-request", "When is lunch served?", author=BOB, instance="gone:1:dead00"
    )
    alive = {slack.manager._parts.instance}
    assert await TurnRecovery(conversations, slack.manager, lambda: alive).sweep() == 1
    (shown,) = await slack.answers("C0RESUME", thread)
    assert "noon" in shown
    assert messages.resumed("en") in shown
    answer = await _last_answer(slack.services, ("slack", TEAM, "C0RESUME", thread))
    assert answer.request_id == "dead-request"
