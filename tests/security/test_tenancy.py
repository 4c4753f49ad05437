"""Tenants apart: two Slack workspaces installed through OAuth never reach each other's knowledge bases, and the
operator's only through a grant; the operator's own chats (the web chat) never reach a workspace's either."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
import pytest_asyncio

from adapters.slack.app import BOT_SCOPES, SlackAdapter
from adapters.slack.app import create as create_slack
from adapters.slack.translate import command_style
from bot.app.manager import build_manager, chat_policy
from bot.app.services import build_services
from bot.chat.manager import ConversationManager
from bot.commands.registry import parse_command
from bot.types import ConversationKey, IncomingMessage, UserRef
from bot.words import messages
from fakes.slack import FakeSlackAPI, events
from rag.ingest.documents import SourceFile
from storage.records import KnowledgeBaseRecord
from tests.conftest import EmbeddedSettings
from tests.e2e.test_slack import SECRET, Slack, _serve
from tests.e2e.test_slack_installs import CLIENT_ID, CLIENT_SECRET, _ask, _command, _install
from tests.support.chat import RecordingTarget

ONE, ONE_ADMIN = "T0ONE", "U0ONEADMIN"
TWO, TWO_ADMIN = "T0TWO", "U0TWOADMIN"
LAUNCH = b"# Launch\n\nThe launch code of project Kestrel is 7-4-1-9, kept by the night shift.\n"
HANDBOOK = b"# Handbook\n\nLunch is served in the canteen from noon until two.\n"


@dataclass
class World:
    slack: Slack
    manager: ConversationManager
    handbook: KnowledgeBaseRecord


@pytest_asyncio.fixture(scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[World]:
    async with FakeSlackAPI() as fake:
        settings = embedded_settings(
            tmp_path_factory.mktemp("tenancy"),
            DEFAULT_KNOWLEDGE_BASES="handbook",
            SLACK_SIGNING_SECRET=SECRET,
            SLACK_CLIENT_ID=CLIENT_ID,
            SLACK_CLIENT_SECRET=CLIENT_SECRET,
            SLACK_API_BASE_URL=fake.base_url,
        )
        async with build_services(settings) as services:
            handbook = await services.knowledge.create("handbook", {})
            await services.ingestor.ingest(handbook, SourceFile(HANDBOOK, "upload:handbook.md", "handbook.md"))
            manager = build_manager(services, chat_policy(settings))
            adapter = create_slack(manager, settings, services.db)
            assert isinstance(adapter, SlackAdapter)
            runner, url = await _serve(adapter)
            await adapter.start()
            slack = Slack(services, fake, adapter, url, manager, settings)
            try:
                for team, admin in ((ONE, ONE_ADMIN), (TWO, TWO_ADMIN)):
                    fake.register_oauth_code(
                        f"code-{team}",
                        client_id=CLIENT_ID,
                        client_secret=CLIENT_SECRET,
                        team_id=team,
                        team_name=team,
                        installer_user_id=admin,
                        bot_token=f"xoxb-{team}",
                        bot_user_id=events.BOT_USER_ID,
                        bot_id=f"B{team}",
                        scope=",".join(BOT_SCOPES),
                    )
                    assert await _install(slack, f"code-{team}") == 200
                # Workspace ONE makes a knowledge base of its own from its chat and fills it.
                assert await _command(slack, ONE, ONE_ADMIN, "C0ONE", "create kestrel") == messages.kb_created(
                    "kestrel", "en", reading=False
                )
                assert await _command(slack, ONE, ONE_ADMIN, "C0ONE", "use kestrel") == messages.kb_now_using(
                    "kestrel", "en"
                )
                kestrel = await services.knowledge.named("kestrel", f"slack:{ONE}")
                assert kestrel is not None
                assert kestrel.owner == f"slack:{ONE}"
                await services.ingestor.ingest(kestrel, SourceFile(LAUNCH, "upload:launch.md", "launch.md"))
                added = await _command(slack, ONE, ONE_ADMIN, "C0ONE", 'faq add "Who keeps the launch code?" "Nadia"')
                assert added == messages.faq_added("kestrel", "en", created=True)
                yield World(slack, manager, handbook)
            finally:
                await adapter.stop()
                await runner.cleanup()


async def _kestrel(world: World) -> KnowledgeBaseRecord:
    kb = await world.slack.services.knowledge.named("kestrel", f"slack:{ONE}")
    assert kb is not None
    return kb


async def test_another_workspace_cannot_list_or_see_a_workspaces_knowledge_base(world: World) -> None:
    listed = await _command(world.slack, TWO, TWO_ADMIN, "C0TWO", "list")
    assert "kestrel" not in listed
    assert "handbook" not in listed
    info = await _command(world.slack, TWO, TWO_ADMIN, "C0TWO", "info kestrel")
    assert info == messages.kb_missing("kestrel", "en")


async def test_another_workspaces_admin_cannot_bind_a_workspaces_knowledge_base_by_name(world: World) -> None:
    refused = await _command(world.slack, TWO, TWO_ADMIN, "C0TWO", "use kestrel")
    # Told it does not exist, as for a name nobody created: not even whether it exists elsewhere.
    assert refused == messages.kb_use_missing("kestrel", [], "en", create=True)
    assert await world.slack.services.bindings.kb_ids("slack", TWO, "C0TWO") == []


async def test_a_workspace_may_create_a_name_another_workspace_uses_and_each_reads_its_own(world: World) -> None:
    slack = world.slack
    assert await _command(slack, TWO, TWO_ADMIN, "C0TWO2", "create kestrel") == messages.kb_created(
        "kestrel", "en", reading=False
    )
    assert await _command(slack, TWO, TWO_ADMIN, "C0TWO2", "use kestrel") == messages.kb_now_using("kestrel", "en")
    theirs = await slack.services.knowledge.named("kestrel", f"slack:{TWO}")
    assert theirs is not None
    assert theirs.id != (await _kestrel(world)).id
    answer = await _ask(slack, TWO, "C0TWO2", "What is the launch code of project Kestrel?")
    assert "7-4-1-9" not in answer
    assert "launch.md" not in answer


async def test_another_workspace_cannot_search_ingest_into_or_delete_from_a_workspaces_knowledge_base(
    world: World,
) -> None:
    slack = world.slack
    kestrel = await _kestrel(world)
    (faq,) = await slack.services.faqs.in_kb(kestrel.id)
    # The whole id and the short id /faq list shows, from a chat of the other workspace.
    for faq_id in (faq.id, faq.id[:8]):
        assert await _command(slack, TWO, TWO_ADMIN, "C0TWO", f"faq delete {faq_id}") != messages.faq_deleted(
            faq.question, "en"
        )
    assert [f.id for f in await slack.services.faqs.in_kb(kestrel.id)] == [faq.id]
    jobs = await _command(slack, TWO, TWO_ADMIN, "C0TWO", "jobs")
    assert "kestrel" not in jobs
    added = await _command(slack, TWO, TWO_ADMIN, "C0TWO", 'faq add "Who keeps the launch code?" "Mallory"')
    assert "kestrel" not in added
    assert len(await slack.services.faqs.in_kb(kestrel.id)) == 1
    answer = await _ask(slack, TWO, "C0TWO", "What is the launch code of project Kestrel?")
    assert "7-4-1-9" not in answer
    assert "Nadia" not in answer


async def test_a_workspace_reads_the_operators_knowledge_base_only_once_granted_and_never_changes_it(
    world: World,
) -> None:
    slack, knowledge = world.slack, world.slack.services.knowledge
    # DEFAULT_KNOWLEDGE_BASES names the operator's handbook: not a workspace's default until it is granted.
    assert "canteen" not in await _ask(slack, ONE, "C0ONE3", "When is lunch served?")
    assert await _command(slack, ONE, ONE_ADMIN, "C0ONE3", "use handbook") == messages.kb_use_missing(
        "handbook", ["kestrel"], "en", create=True
    )
    assert await knowledge.grant("handbook", f"slack:{ONE}")
    assert "canteen" in await _ask(slack, ONE, "C0ONE4", "When is lunch served?")
    assert await _command(slack, ONE, ONE_ADMIN, "C0ONE4", "use handbook") == messages.kb_now_using("handbook", "en")
    # A grant is for reading: the workspace's admin adds nothing to the operator's knowledge base.
    refused = await _command(slack, ONE, ONE_ADMIN, "C0ONE4", 'faq add "Is lunch free?" "No"')
    assert refused == messages.kb_only_shared("handbook", "en", command_style("/kb"))
    assert await slack.services.faqs.in_kb(world.handbook.id) == []
    # The other workspace still sees nothing of it.
    assert "handbook" not in await _command(slack, TWO, TWO_ADMIN, "C0TWO", "list")
    # Taken back, the binding made while granted reads nothing more, at once.
    assert await knowledge.revoke("handbook", f"slack:{ONE}")
    assert "canteen" not in await _ask(slack, ONE, "C0ONE4", "When is lunch served?")


@pytest.mark.parametrize("command", ["kb use kestrel", "kb info kestrel"])
async def test_the_operators_web_chat_cannot_name_a_workspaces_knowledge_base(world: World, command: str) -> None:
    key = ConversationKey("web", "", "session-1", "")
    target = RecordingTarget()
    message = IncomingMessage(
        key=key,
        message_id=f"m-{command}",
        user=UserRef("session-1", verified_admin=True),
        text="/" + command,
        command=parse_command("/" + command),
        private=True,
    )
    await world.manager.handle(message, target)
    (reply,) = target.replies()
    assert reply == (
        messages.kb_use_missing("kestrel", ["handbook"], "en", create=False)
        if command.startswith("kb use")
        else messages.kb_missing("kestrel", "en")
    )
    assert await world.slack.services.bindings.kb_ids("web", "", "session-1") == []


async def test_another_workspace_cannot_rate_a_workspaces_answer_by_its_id(world: World) -> None:
    slack = world.slack
    question = "What is the launch code of project Kestrel?"
    ts = slack.fake.user_message(ONE, "C0ONE5", "U0SOMEONE", f"<@{events.BOT_USER_ID}> {question}")
    event = events.app_mention(channel="C0ONE5", user="U0SOMEONE", text=question, team=ONE, ts=ts)
    assert (await slack.post(events.envelope(event, team_id=ONE)))[0] == 200
    await slack.answers("C0ONE5", ts)
    conversation = await world.manager.conversation(ConversationKey("slack", ONE, "C0ONE5", ts))
    answer = await slack.services.conversations.last_answer(conversation.id)
    assert answer is not None
    elsewhere = ConversationKey("slack", TWO, "C0TWO", "")
    assert await world.manager.feedback(elsewhere, answer.id, "down") is None
    rated = await slack.services.conversations.last_answer(conversation.id)
    assert rated is not None
    assert rated.feedback == ""
