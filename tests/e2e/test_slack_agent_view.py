"""Slack's agent view end to end: DM threads kept apart and titled, suggested prompts from the most asked FAQs, the
App Home tab, the viewed channel as context, and workspaces without the feature keeping the plain DM; slack-bolt
and slack_sdk against the fake Web API, over real services (Weaviate, the embedder, SQLite)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from adapters.slack import words as slack_words
from adapters.slack.agent import MAX_PROMPTS, PROMPT_MESSAGE_MAX, PROMPT_TITLE_MAX, THREAD_TITLE_MAX
from adapters.slack.app import SlackAdapter
from adapters.slack.app import create as create_slack
from fakes.slack import events
from rag.ingest.faq_sheet import FaqEntry
from tests.conftest import EmbeddedSettings
from tests.e2e.test_slack import ADMIN, BOB, HANDBOOK, TEAM, Slack, _press, _serve
from tests.security.slack_support import slack_scene

TITLE = "assistant.threads.setTitle"
PROMPTS = "assistant.threads.setSuggestedPrompts"
LONG_QUESTION = (
    "Where do I find the travel policy for trips abroad that last longer than two weeks and include a weekend, "
    "and who signs off the costs of the flights, the hotel, the rental car and the meals on the way there, "
    "when my manager is away on leave and the finance team has not yet answered my email from last Monday "
    "about the budget of the project I travel for?"
)
HANDBOOK_FAQS = [
    ("Who waters the plants?", "Facilities waters the plants on Mondays."),
    ("What is the wifi password?", "The wifi password is on the card at reception."),
    ("Are dogs allowed in the office?", "Dogs are welcome on Fridays."),
    ("Can I bring a guest to lunch?", "Guests are welcome at lunch with a visitor badge."),
    (LONG_QUESTION, "The travel policy is on the intranet; the head of department signs off when a manager is away."),
]


@pytest_asyncio.fixture(scope="module")
async def slack(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[Slack]:
    data_dir = tmp_path_factory.mktemp("slack-agent")
    documents = {"handbook.md": HANDBOOK}
    async with slack_scene(data_dir, embedded_settings, documents, DEFAULT_KNOWLEDGE_BASES="handbook,hr") as slack:
        knowledge, importer = slack.services.knowledge, slack.services.faq_importer
        handbook = await knowledge.find("handbook")
        await importer.import_entries(handbook, [FaqEntry(question, (answer,)) for question, answer in HANDBOOK_FAQS])
        vacation = FaqEntry("How many vacation days do I get?", ("You get 28 vacation days a year.",))
        await importer.import_entries(await knowledge.create("hr", {}), [vacation])
        fresh = [FaqEntry(f"Fresh question {n}?", (f"Fresh answer {n}.",)) for n in range(6)]
        await importer.import_entries(await knowledge.create("fresh", {}), fresh)
        await knowledge.create("empty", {})
        yield slack


async def _dm(
    slack: Slack,
    channel: str,
    text: str,
    *,
    thread_ts: str | None = None,
    viewing: tuple[str, ...] = (),
    agent_view: bool = True,
    url: str | None = None,
) -> str:
    """A person's DM message as the agent view delivers it (stamped with what they view); returns its ts."""
    ts = slack.fake.user_message(TEAM, channel, BOB, text, thread_ts=thread_ts)
    event = events.message(channel=channel, user=BOB, text=text, team=TEAM, ts=ts, thread_ts=thread_ts)
    if agent_view:
        event["app_context"] = events.app_context(*viewing, team=TEAM) if viewing else {}
    status, _ = await _post(slack, events.envelope(event, team_id=TEAM), url)
    assert status == 200
    return ts


async def _post(slack: Slack, payload: dict[str, Any], url: str | None = None) -> tuple[int, str]:
    if url is None:
        return await slack.post(payload)
    original = slack.url
    slack.url = url
    try:
        return await slack.post(payload)
    finally:
        slack.url = original


async def _open(slack: Slack, channel: str, tab: str, *, user: str = BOB, url: str | None = None) -> None:
    event = events.app_home_opened(user=user, channel=channel, tab=tab)
    status, _ = await _post(slack, events.envelope(event, team_id=TEAM), url)
    assert status == 200


async def _settled(slack: Slack) -> None:
    """Wait until the work the adapter's listeners started (past acknowledging Slack) has ended."""
    work = set(slack.adapter._listeners.work)
    if work:
        await asyncio.wait(work, timeout=30)


async def _stored(slack: Slack, key: tuple[str, str, str, str], count: int = 1) -> list[Any]:
    """The conversation's answers once `count` of them are stored as done."""
    conversations = slack.services.conversations

    async def done() -> list[Any]:
        while True:
            conversation = await conversations.find(*key)
            if conversation is not None:
                answers = [m for m in await conversations.recent(conversation.id, 50) if m.role == "assistant"]
                if len(answers) >= count and all(answer.status == "done" for answer in answers[:count]):
                    return answers
            await asyncio.sleep(0.05)

    return await asyncio.wait_for(done(), 60)


async def _bind(slack: Slack, channel: str, kb: str) -> None:
    """An admin binds a knowledge base to a channel or DM with the slash command."""
    hook = slack.fake.response_url(team_id=TEAM, channel=channel, user=ADMIN)
    fields = events.slash_command(
        command="/kb", text=f"use {kb}", user_id=ADMIN, channel_id=channel, team_id=TEAM, response_url=hook
    )
    assert (await slack.post(fields, form=True))[0] == 200
    await slack.fake.wait_for(lambda: slack.fake.responses(hook), timeout=30)


async def test_each_question_in_the_agent_view_is_a_thread_of_its_own_titled_once_after_it(slack: Slack) -> None:
    first = await _dm(slack, "D0THREADS", "How do I install the VPN client?")
    (shown,) = await slack.answers("D0THREADS", first)
    assert "Software Center" in shown
    await slack.fake.wait_for(lambda: slack.fake.thread_title("D0THREADS", first), timeout=10)
    assert slack.fake.thread_title("D0THREADS", first) == "How do I install the VPN client?"
    # A reply in the thread continues its conversation, and the thread keeps its first title.
    await _dm(slack, "D0THREADS", "How does it connect?", thread_ts=first)
    shown_after = await slack.answers("D0THREADS", first, 2)
    assert "badge number" in shown_after[1]
    (_, follow_up) = await _stored(slack, ("slack", TEAM, "D0THREADS", first), 2)
    assert "vpn" in follow_up.meta["rewritten"].lower()
    # A 👍 on an answer in the thread is the thread's conversation's.
    reply = slack.bot_replies("D0THREADS", first)[1]
    await _press(slack, "D0THREADS", reply, f"up:{follow_up.id}")
    await slack.fake.wait_for(lambda: slack.fake.message("D0THREADS", reply.ts).edits > reply.edits, timeout=10)
    assert (await slack.services.conversations.message(follow_up.id)).feedback == "up"
    # A new question is a new thread, a new conversation, with a title of its own (shortened to Slack's list).
    long = "When is lunch served, and " + "is there anything vegetarian on the menu today " * 4 + "?"
    second = await _dm(slack, "D0THREADS", long)
    await slack.answers("D0THREADS", second)
    await _stored(slack, ("slack", TEAM, "D0THREADS", second))
    await slack.fake.wait_for(lambda: slack.fake.thread_title("D0THREADS", second), timeout=10)
    title = slack.fake.thread_title("D0THREADS", second)
    assert len(title) <= THREAD_TITLE_MAX
    assert title.startswith("When is lunch served")
    assert title.endswith("…")
    titled = [call.params["thread_ts"] for call in slack.fake.calls(TITLE) if call.params["channel_id"] == "D0THREADS"]
    assert titled == [first, second]
    assert slack.dm_replies("D0THREADS") == []  # nothing answered in the DM itself


async def test_a_dm_outside_the_agent_view_keeps_one_conversation_answered_in_the_dm_without_titles(
    slack: Slack,
) -> None:
    await _dm(slack, "D0LEGACY", "How do I install the VPN client?", agent_view=False)
    (shown,) = await slack.dm_answers("D0LEGACY")
    assert "Software Center" in shown
    await _stored(slack, ("slack", TEAM, "D0LEGACY", ""))
    assert [call for call in slack.fake.calls(TITLE) if call.params["channel_id"] == "D0LEGACY"] == []


async def test_opening_the_dm_suggests_the_most_asked_faqs_each_within_slacks_limits(slack: Slack) -> None:
    asked = ["Who waters the plants?"] * 3 + [LONG_QUESTION] * 2 + ["What is the wifi password?"]
    for number, question in enumerate(asked):
        ts = await _dm(slack, "D0ASKERS", question)
        answers = await _stored(slack, ("slack", TEAM, "D0ASKERS", ts))
        assert answers[0].meta["outcome"] == "faq_direct", (number, question)
    await _open(slack, "D0OPENS", "messages")
    await slack.fake.wait_for(lambda: slack.fake.suggested_prompts("D0OPENS"), timeout=30)
    shown = slack.fake.suggested_prompts("D0OPENS")
    assert shown is not None
    assert shown.thread_ts is None  # the agent view's prompts: no thread_ts, which would make the call fail silently
    assert shown.title == slack_words.prompts_heading("en")
    assert len(shown.prompts) == MAX_PROMPTS
    titles = [title for title, _ in shown.prompts]
    assert titles[0] == "Who waters the plants?"
    assert titles[2] == "What is the wifi password?"
    assert titles[3] == "Are dogs allowed in the office?"  # never asked: the first of the rest, by question
    long_title, long_message = shown.prompts[1]
    assert long_title.endswith("…")
    assert len(long_title) <= PROMPT_TITLE_MAX
    assert long_message.endswith("…")
    assert len(long_message) <= PROMPT_MESSAGE_MAX
    assert LONG_QUESTION.startswith(long_message[:-1].rstrip())


async def test_faqs_never_asked_are_suggested_in_order_and_a_kb_without_faqs_suggests_nothing(slack: Slack) -> None:
    await _bind(slack, "D0FRESH", "fresh")
    await _open(slack, "D0FRESH", "messages")
    await slack.fake.wait_for(lambda: slack.fake.suggested_prompts("D0FRESH"), timeout=30)
    shown = slack.fake.suggested_prompts("D0FRESH")
    assert shown is not None
    assert [title for title, _ in shown.prompts] == [f"Fresh question {n}?" for n in range(MAX_PROMPTS)]
    await _bind(slack, "D0EMPTY", "empty")
    calls_before = len(slack.fake.calls(PROMPTS))
    await _open(slack, "D0EMPTY", "messages")
    await _settled(slack)
    assert len(slack.fake.calls(PROMPTS)) == calls_before


async def test_the_home_tab_shows_how_to_ask_the_knowledge_bases_read_and_the_commands(slack: Slack) -> None:
    await _open(slack, "D0HOME", "home", user="U0HOMER")
    await slack.fake.wait_for(lambda: slack.fake.home_view("U0HOMER"), timeout=30)
    view = slack.fake.home_view("U0HOMER")
    assert view is not None
    texts = [block["text"]["text"] for block in view["blocks"] if "text" in block]
    assert texts[0] == slack_words.home_title("en")
    assert "• handbook\n• hr" in texts
    commands = "\n".join(texts[texts.index(slack_words.home_commands("en")) + 1 :])
    assert "`/kb help`" in commands
    assert "/kb ingest" not in commands  # not an admin: the admin commands are not offered


async def test_the_channel_a_person_views_focuses_their_dm_question_on_its_knowledge_bases(slack: Slack) -> None:
    await _bind(slack, "C0HR", "hr")
    kbs = {kb.name: kb.id for kb in await slack.services.knowledge.all()}
    viewing = await _dm(slack, "D0VIEWER", "How many vacation days do I get?", viewing=("C0HR",))
    (focused,) = await _stored(slack, ("slack", TEAM, "D0VIEWER", viewing))
    assert focused.meta["kb_ids"] == [kbs["hr"]]
    assert "28 vacation days" in focused.text
    elsewhere = await _dm(slack, "D0VIEWER", "How many vacation days do I get?", viewing=("C0UNBOUND",))
    (wide,) = await _stored(slack, ("slack", TEAM, "D0VIEWER", elsewhere))
    assert sorted(wide.meta["kb_ids"]) == sorted([kbs["handbook"], kbs["hr"]])


async def test_a_legacy_assistant_thread_gets_prompts_a_title_and_its_viewed_channel(slack: Slack) -> None:
    await _bind(slack, "C0HRLEGACY", "hr")
    root = slack.fake.user_message(TEAM, "D0PANEL", BOB, "New chat")
    started = events.assistant_thread_started(
        user=BOB, channel="D0PANEL", thread_ts=root, team=TEAM, viewing="C0HRLEGACY"
    )
    assert (await slack.post(events.envelope(started, team_id=TEAM)))[0] == 200
    await slack.fake.wait_for(lambda: slack.fake.suggested_prompts("D0PANEL", root), timeout=30)
    await _dm(slack, "D0PANEL", "How many vacation days do I get?", thread_ts=root, agent_view=False)
    (answer,) = await _stored(slack, ("slack", TEAM, "D0PANEL", root))
    kbs = {kb.name: kb.id for kb in await slack.services.knowledge.all()}
    assert answer.meta["kb_ids"] == [kbs["hr"]]
    await slack.fake.wait_for(lambda: slack.fake.thread_title("D0PANEL", root), timeout=10)
    assert slack.fake.thread_title("D0PANEL", root) == "How many vacation days do I get?"


async def test_a_failing_title_call_never_costs_the_answer(slack: Slack) -> None:
    slack.fake.fail_next(error="internal_error", method=TITLE)
    ts = await _dm(slack, "D0FLAKY", "When is lunch served?")
    (shown,) = await slack.answers("D0FLAKY", ts)
    assert "noon" in shown
    (failed,) = [call for call in slack.fake.calls(TITLE) if call.params["channel_id"] == "D0FLAKY"]
    assert failed.error == "internal_error"
    # A passing fault is no missing feature: the next thread is titled.
    later = await _dm(slack, "D0FLAKY", "How do I install the VPN client?")
    await slack.answers("D0FLAKY", later)
    await slack.fake.wait_for(lambda: slack.fake.thread_title("D0FLAKY", later), timeout=10)


async def test_a_workspace_without_the_agent_view_is_answered_as_before_and_asked_once(
    slack: Slack, caplog: pytest.LogCaptureFixture
) -> None:
    # A process of its own, so that what it learns of the workspace is its alone.
    adapter = create_slack(slack.manager, slack.settings, slack.services.db)
    assert isinstance(adapter, SlackAdapter)
    runner, url = await _serve(adapter)
    slack.fake.set_agent_view(TEAM, False)
    caplog.set_level(logging.WARNING, logger="adapters.slack.agent")
    try:
        await adapter.start()
        for question in ("When is lunch served?", "How do I install the VPN client?"):
            ts = await _dm(slack, "D0NOPLAN", question, url=url)
            (shown,) = await slack.answers("D0NOPLAN", ts)
            assert shown
        for _ in range(2):
            await _open(slack, "D0NOPLAN", "messages", url=url)
        await slack.fake.wait_for(
            lambda: [call for call in slack.fake.calls(PROMPTS) if call.params["channel_id"] == "D0NOPLAN"],
            timeout=30,
        )
        await adapter.stop()  # lets the second opening's work finish
    finally:
        slack.fake.set_agent_view(TEAM, True)
        await runner.cleanup()
    titles = [call for call in slack.fake.calls(TITLE) if call.params["channel_id"] == "D0NOPLAN"]
    prompts = [call for call in slack.fake.calls(PROMPTS) if call.params["channel_id"] == "D0NOPLAN"]
    assert [call.error for call in titles] == ["not_allowed"]
    assert [call.error for call in prompts] == ["not_allowed"]
    refusals = [record for record in caplog.records if "slack=feature_unavailable" in record.getMessage()]
    assert len(refusals) == 2  # one line per method, for the whole workspace
