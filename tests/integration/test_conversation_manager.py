"""The conversation manager as every platform uses it: turns stored, ordered, limited, stopped; commands checked.

Real repositories on SQLite and PostgreSQL; the answerer is scripted and the reply target records.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bot.app.settings import Settings
from bot.chat.limits import RateLimit
from bot.chat.manager import ChatPolicy, ConversationManager
from bot.chat.parts import ChatParts
from bot.chat.sources import SourceBook
from bot.commands.builtin import default_registry
from bot.commands.parts import CommandParts, Uploads
from bot.commands.registry import Asker
from bot.knowledge.bases import KnowledgeBases
from bot.knowledge.jobs import JobRunner
from bot.types import Command, ConversationKey, IncomingMessage, UserRef
from bot.words import messages
from bot.words.messages import TURN_FAILED
from storage.db import Database
from storage.errors import StorageError
from storage.records import ConversationRecord
from storage.repos.bindings import BindingRepo
from storage.repos.conversations import ConversationRepo
from storage.repos.documents import DocumentRepo
from storage.repos.faqs import FaqRepo
from storage.repos.jobs import JobRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from tests.support.chat import RecordingTarget, ScriptedAnswerer, wait_until

ADMIN = UserRef("u-admin")
ALICE = UserRef("u-alice")
DM = ConversationKey("test", "team", "dm-alice")
# How commands are written, as the catalogue says it (the one source of it), to a person or an admin in a DM.
USAGE = default_registry().usage
PERSON, AN_ADMIN = Asker(is_admin=False), Asker(is_admin=True)
GROUP = ConversationKey("test", "team", "group-1")


@dataclass
class ChatWorld:
    """The parts of Services the manager and its commands use, over a real database."""

    settings: Settings
    conversations: ConversationRepo
    bindings: BindingRepo
    knowledge: KnowledgeBases
    documents: DocumentRepo
    faqs: FaqRepo
    job_repo: JobRepo
    jobs: JobRunner
    answerer: ScriptedAnswerer = field(default_factory=ScriptedAnswerer)
    faq_importer: Any = None
    index_lock: Any = None

    def chat_parts(self) -> ChatParts:
        """The manager's parts over these repositories and the current answerer."""
        return ChatParts(
            conversations=self.conversations,
            settings=self.bindings,
            knowledge=self.knowledge,
            answerer=self.answerer,
            jobs=self.jobs,
            sources=SourceBook(self.documents, self.faqs),
        )

    def command_parts(self) -> CommandParts:
        """The commands' parts over these repositories."""
        limits = self.settings.ingestion_limits()
        return CommandParts(
            knowledge=self.knowledge,
            bindings=self.bindings,
            faqs=self.faqs,
            faq_importer=self.faq_importer,
            jobs=self.jobs,
            job_repo=self.job_repo,
            index_lock=self.index_lock,
            uploads=Uploads(self.settings.data_dir / "uploads", limits.max_file_bytes),
        )


async def _no_work(job: Any, progress: Any) -> dict[str, Any]:
    return {}


@pytest_asyncio.fixture
async def world(db: Database, tmp_path: Path) -> ChatWorld:
    """The parts, with a knowledge base "handbook" that chats read by default."""
    documents, job_repo = DocumentRepo(db), JobRepo(db)
    world = ChatWorld(
        settings=Settings(_env_file=None, RAGBOT_DATA_DIR=tmp_path),
        conversations=ConversationRepo(db),
        bindings=BindingRepo(db),
        knowledge=KnowledgeBases(KnowledgeBaseRepo(db), documents, None),  # type: ignore[arg-type]
        documents=documents,
        faqs=FaqRepo(db),
        job_repo=job_repo,
        jobs=JobRunner(job_repo, _no_work),
    )
    await world.knowledge.create("handbook", {})
    return world


def _manager(world: ChatWorld, **policy: Any) -> ConversationManager:
    defaults: dict[str, Any] = {
        "admins": {"test": frozenset({ADMIN.id})},
        "queue_notice_after": 5.0,
        "default_kbs": ("handbook",),
    }
    return ConversationManager(world.chat_parts(), ChatPolicy(**{**defaults, **policy}), world.command_parts())


def _message(text: str, *, key: ConversationKey = DM, user: UserRef = ALICE, **fields: Any) -> IncomingMessage:
    from bot.commands.registry import parse_command

    return IncomingMessage(
        key=key, message_id=fields.pop("message_id", ""), user=user, text=text, command=parse_command(text), **fields
    )


async def _stored(world: ChatWorld, key: ConversationKey) -> list[Any]:
    conversation = await world.conversations.resolve(key.platform, key.workspace, key.chat, key.thread)
    return await world.conversations.recent(conversation.id, 50)


async def test_an_answer_is_streamed_finished_with_sources_and_stored_with_its_author(world: ChatWorld) -> None:
    target = RecordingTarget()
    result = await _manager(world).handle(_message("Which VPN client?", message_id="m1"), target)
    assert result is not None
    (stream,) = target.streams
    assert stream.pushed == ["The VPN ", "client."]
    assert stream.statuses == [messages.searching("en")]
    assert stream.finished is not None
    assert (stream.finished.text, stream.finished.outcome) == ("The VPN client.", "generated")
    assert [source.title for source in stream.finished.sources] == ["vpn.md"]
    question, answer = await _stored(world, DM)
    assert (question.author, question.text) == (ALICE.id, "Which VPN client?")
    assert (answer.status, answer.text, answer.platform_message_id) == ("done", "The VPN client.", "stream-1")
    assert stream.finished.message_id == answer.id
    assert [stage["name"] for stage in answer.meta["stages"]] == ["CHAT_COMPLETION_STREAM", "STREAM_ANSWER"]


async def test_an_answer_broken_mid_stream_ends_with_an_apology_and_is_stored_as_failed(world: ChatWorld) -> None:
    world.answerer = ScriptedAnswerer(["The VPN ", "!"])
    target = RecordingTarget()
    await _manager(world).handle(_message("Which VPN client?"), target)
    (stream,) = target.streams
    assert (stream.text, stream.failed) == ("The VPN ", TURN_FAILED)
    _, answer = await _stored(world, DM)
    assert (answer.status, answer.text) == ("failed", "The VPN ")
    assert answer.meta["error"]["type"] == "ConnectionResetError"
    assert answer.meta["error"]["notes"] == ["pipeline=rag_stream stage=STREAM_ANSWER"]


async def test_a_pipeline_failure_is_apologised_for_without_internal_text(world: ChatWorld) -> None:
    world.answerer = ScriptedAnswerer(fail_in_pipeline=True)
    target = RecordingTarget()
    await _manager(world).handle(_message("Which VPN client?"), target)
    assert target.replies() == [TURN_FAILED]
    assert "unreachable" not in target.replies()[0]
    _, answer = await _stored(world, DM)
    assert answer.meta["error"]["notes"] == ["pipeline=rag_stream stage=CHAT_COMPLETION_STREAM"]


class _BrokenStore(ConversationRepo):
    async def resolve(self, platform: str, workspace: str, chat: str, thread: str = "") -> ConversationRecord:
        raise StorageError("database is locked")


async def test_a_store_failure_before_the_turn_still_gets_an_apology(world: ChatWorld, db: Database) -> None:
    world.conversations = _BrokenStore(db)
    target = RecordingTarget()
    assert await _manager(world).handle(_message("Which VPN client?"), target) is None
    assert target.replies() == [TURN_FAILED]


async def test_a_retried_delivery_of_the_same_event_is_answered_once(world: ChatWorld) -> None:
    manager, target = _manager(world), RecordingTarget()
    assert await manager.handle(_message("Which VPN client?", message_id="evt-7"), target) is not None
    assert await manager.handle(_message("Which VPN client?", message_id="evt-7"), target) is None
    assert len(target.streams) == 1
    assert len(world.answerer.asked) == 1


async def test_questions_of_one_conversation_run_in_order_and_the_waiting_one_is_told(world: ChatWorld) -> None:
    world.answerer = ScriptedAnswerer(["first ", "|", "done"])
    manager = _manager(world, queue_notice_after=0.0)
    first_target, second_target = RecordingTarget(), RecordingTarget()
    first = asyncio.create_task(manager.handle(_message("one?"), first_target))
    await asyncio.wait_for(world.answerer.holding.wait(), 10)
    second = asyncio.create_task(manager.handle(_message("two?"), second_target))
    await wait_until(lambda: bool(second_target.streams), second_target.changed)
    assert [q for q, _ in world.answerer.asked] == ["one?"]  # the second waits for the first
    assert second_target.replies() == [messages.queued(1, "en")]
    world.answerer.release.set()
    await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert [q for q, _ in world.answerer.asked] == ["one?", "two?"]
    assert [m.text for m in await _stored(world, DM) if m.role == "user"] == ["one?", "two?"]


async def test_other_conversations_are_not_held_up_by_a_slow_one(world: ChatWorld) -> None:
    world.answerer = ScriptedAnswerer(["slow ", "|", "answer"])
    manager = _manager(world)
    slow = asyncio.create_task(manager.handle(_message("slow?"), RecordingTarget()))
    await asyncio.wait_for(world.answerer.holding.wait(), 10)
    other = RecordingTarget()
    world_other = ConversationKey("test", "team", "dm-bob")
    result = await asyncio.wait_for(manager.handle(_message("quick?", key=world_other), other), 10)
    assert result is not None
    assert not slow.done()
    world.answerer.release.set()
    await asyncio.wait_for(slow, 10)


async def test_stop_ends_the_answer_being_written_and_keeps_what_was_written(world: ChatWorld) -> None:
    world.answerer = ScriptedAnswerer(["Partial ", "|", "never shown"])
    manager = _manager(world)
    answering = RecordingTarget()
    turn = asyncio.create_task(manager.handle(_message("long question?"), answering))
    await asyncio.wait_for(world.answerer.holding.wait(), 10)
    stopper = RecordingTarget()
    await manager.handle(_message("/stop"), stopper)
    assert stopper.replies() == [messages.stopping("en")]
    world.answerer.release.set()
    result = await asyncio.wait_for(turn, 10)
    assert result is not None
    (stream,) = answering.streams
    assert stream.finished is not None
    assert (stream.finished.text, stream.finished.outcome) == ("Partial ", "stopped")
    assert messages.stopped_note("en") in stream.finished.notice
    _, answer = await _stored(world, DM)
    assert (answer.text, answer.meta["outcome"]) == ("Partial ", "stopped")
    nothing = RecordingTarget()
    await manager.handle(_message("/stop"), nothing)
    assert nothing.replies() == [messages.nothing_to_stop("en")]


async def test_a_person_over_the_rate_limit_is_answered_politely_and_others_are_not_affected(
    world: ChatWorld,
) -> None:
    now = [0.0]
    manager = ConversationManager(
        world.chat_parts(),
        ChatPolicy(rate_limit=RateLimit(count=2, window=60.0), default_kbs=("handbook",)),
        world.command_parts(),
        clock=lambda: now[0],
    )
    target = RecordingTarget()
    for question in ("a?", "b?", "c?"):
        await manager.handle(_message(question), target)
    assert [q for q, _ in world.answerer.asked] == ["a?", "b?"]
    assert target.replies()[-1] == messages.rate_limited(60.0, "en")
    await manager.handle(_message("d?", user=UserRef("u-bob"), key=ConversationKey("test", "team", "dm-bob")), target)
    now[0] = 61.0
    await manager.handle(_message("e?"), target)
    assert [q for q, _ in world.answerer.asked] == ["a?", "b?", "d?", "e?"]


async def test_in_a_group_the_bot_answers_only_when_addressed_until_an_admin_says_all(world: ChatWorld) -> None:
    manager, target = _manager(world), RecordingTarget()
    assert await manager.handle(_message("chatter", key=GROUP, private=False, addressed=False), target) is None
    assert await manager.handle(_message("@bot which VPN?", key=GROUP, private=False), target) is not None
    await manager.handle(_message("/mode all", key=GROUP, private=False), target)
    assert target.replies()[-1] == messages.admins_only("mode", "en")
    await manager.handle(_message("/mode all", key=GROUP, private=False, user=ADMIN), target)
    assert target.replies()[-1] == messages.mode_set("all", "en")
    assert await manager.handle(_message("which VPN?", key=GROUP, private=False, addressed=False), target)


@pytest.mark.parametrize(
    ("text", "reply"),
    [
        ("/nonsense", messages.unknown_command("nonsense", "en")),
        ("/ingest https://example.org/", messages.admins_only("ingest", "en")),
        ("/faq list", messages.admins_only("faq", "en")),
        ("/jobs", messages.admins_only("jobs", "en")),
        ("/kb use other", messages.admins_only("kb use", "en")),
        ("/kb", messages.usage(USAGE("kb", "en", PERSON), "en")),
        ("/kb list extra", messages.usage(USAGE("kb", "en", PERSON), "en")),
        ("/sources", messages.no_sources("en")),
    ],
)
async def test_commands_answer_bad_or_forbidden_use_with_a_clear_reply(world: ChatWorld, text: str, reply: str) -> None:
    target = RecordingTarget()
    await _manager(world).handle(_message(text), target)
    assert target.replies() == [reply]
    assert world.answerer.asked == []


@pytest.mark.parametrize(
    ("text", "reply"),
    [
        ('/faq add "Only a question"', messages.usage(USAGE("faq", "en", AN_ADMIN), "en")),
        ('/faq add " " "an answer"', messages.usage(USAGE("faq", "en", AN_ADMIN, keys=["add"]), "en")),
        ('/faq add "unclosed', f"{messages.UNCLOSED_QUOTE} {messages.usage(USAGE('faq', 'en', AN_ADMIN), 'en')}"),
        ("/ingest", messages.nothing_to_ingest("en")),
        ("/ingest notaurl", messages.not_urls(["notaurl"], "en")),
        ("/faq import", messages.no_faq_sheet("en")),
        ("/kb use missing", messages.kb_missing("missing", "en")),
        ("/faq delete 123", messages.faq_missing("123", "en")),
    ],
)
async def test_admin_commands_with_bad_arguments_say_what_is_wrong(world: ChatWorld, text: str, reply: str) -> None:
    target = RecordingTarget()
    await _manager(world).handle(_message(text, user=ADMIN), target)
    assert target.replies() == [reply]


async def test_help_lists_admin_commands_to_admins_only(world: ChatWorld) -> None:
    manager = _manager(world)
    person, admin = RecordingTarget(), RecordingTarget()
    await manager.handle(_message("/help"), person)
    await manager.handle(_message("/help", user=ADMIN), admin)
    assert "/ingest" not in person.replies()[0]
    assert "/stop" in person.replies()[0]
    assert "/ingest" in admin.replies()[0]


@pytest.mark.parametrize(
    ("key", "user", "shown", "hidden"),
    [
        (DM, ALICE, ["/kb list", "/lang auto"], ["/kb use", "/ingest"]),
        (DM, ADMIN, ["/kb list", "/kb use", "/lang auto", "/ingest"], []),
        (GROUP, ALICE, ["/kb list"], ["/kb use", "/lang auto"]),
        (ConversationKey("web", "", "s1"), ALICE, ["/kb list", "/kb use", "/lang auto"], ["/ingest"]),
    ],
)
async def test_help_and_usage_show_each_person_only_the_forms_they_may_run(
    world: ChatWorld, key: ConversationKey, user: UserRef, shown: list[str], hidden: list[str]
) -> None:
    manager, target = _manager(world, allowed_kbs={"web": ("handbook",)}), RecordingTarget()
    await manager.handle(_message("/help", key=key, user=user, private=key != GROUP), target)
    await manager.handle(_message("/kb", key=key, user=user, private=key != GROUP), target)
    help_, usage = target.replies()
    for form in shown:
        assert form in help_
    for form in hidden:
        assert form not in help_
        assert form not in usage
    assert ("/kb use" in usage) == ("/kb use" in shown)


async def test_a_chat_reads_its_bindings_else_the_defaults_within_its_platforms_allowance(world: ChatWorld) -> None:
    a = await world.knowledge.create("a", {})
    b = await world.knowledge.create("b", {})
    manager = _manager(world, default_kbs=("a",), allowed_kbs={"web": ("b",)})
    assert await manager.readable_kb_ids(DM) == [a.id]
    await world.bindings.bind(DM.platform, DM.workspace, DM.chat, [b.id])
    assert await manager.readable_kb_ids(DM) == [b.id]
    thread = ConversationKey(DM.platform, DM.workspace, DM.chat, "thread-9")
    assert await manager.readable_kb_ids(thread) == [b.id]  # bindings are per chat, threads included
    assert await manager.readable_kb_ids(ConversationKey("web", "", "s1")) == []  # "a" is not allowed on web
    await manager.handle(_message("Which VPN client?"), RecordingTarget())
    assert world.answerer.asked[-1][1] == (b.id,)


async def test_kb_use_binds_the_chat_for_admins_and_for_people_choosing_among_the_allowed(world: ChatWorld) -> None:
    a = await world.knowledge.create("a", {})
    b = await world.knowledge.create("b", {})
    manager = _manager(world, default_kbs=("a",), allowed_kbs={"web": ("a", "b")})
    target = RecordingTarget()
    await manager.handle(_message("/kb use b", user=ADMIN), target)
    assert target.replies()[-1] == messages.kb_now_using("b", "en")
    assert await manager.readable_kb_ids(DM) == [b.id]
    web = ConversationKey("web", "", "s1")
    await manager.handle(_message("/kb use b", key=web), target)
    assert target.replies()[-1] == messages.kb_now_using("b", "en")
    await manager.handle(_message("/kb use c", key=web), target)
    assert target.replies()[-1] == messages.kb_not_allowed("c", "en")
    await manager.handle(_message("/kb list", key=web), target)
    assert "**b** (in use here)" in target.replies()[-1]
    assert a.id != b.id


async def test_new_starts_the_conversation_over(world: ChatWorld) -> None:
    manager, target = _manager(world), RecordingTarget()
    await manager.handle(_message("Which VPN client?"), target)
    assert len(await _stored(world, DM)) == 2
    await manager.handle(_message("/new"), target)
    assert target.replies()[-1] == messages.new_conversation("en")
    assert await _stored(world, DM) == []


async def test_feedback_is_stored_on_the_answer_and_only_within_its_conversation(world: ChatWorld) -> None:
    result = await _manager(world).handle(_message("Which VPN client?"), RecordingTarget())
    assert result is not None
    conversation = await world.conversations.resolve(*[DM.platform, DM.workspace, DM.chat, DM.thread])
    stored = await world.conversations.set_feedback(result.answer.message_id, "down", conversation_id=conversation.id)
    assert stored.feedback == "down"
    other = await world.conversations.resolve("test", "team", "someone-else")
    from storage.errors import NotFound

    with pytest.raises(NotFound):
        await world.conversations.set_feedback(result.answer.message_id, "up", conversation_id=other.id)


def test_parse_command_reads_quotes_bot_names_and_leaves_other_text_alone() -> None:
    from bot.commands.registry import parse_command

    assert parse_command('/faq add "How long?" “Five days.”') == Command(
        "faq", ("add", "How long?", "Five days."), 'add "How long?" “Five days.”'
    )
    assert parse_command("/KB@ragbot list", "ragbot") == Command("kb", ("list",), "list")
    assert parse_command("/kb@otherbot list", "ragbot") is None
    assert parse_command("what is /kb?") is None
    assert parse_command("/") is None
    assert parse_command("/faq add 'open").error == messages.UNCLOSED_QUOTE  # type: ignore[union-attr]


async def test_every_log_line_of_a_turn_carries_its_turn_id(world: ChatWorld, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from bot.chat.turn_log import TurnIdFilter

    world.answerer = ScriptedAnswerer(["!"])  # fails mid-stream: the manager logs the traceback
    handler_filter = TurnIdFilter()
    caplog.handler.addFilter(handler_filter)
    try:
        manager = _manager(world)
        with caplog.at_level(logging.INFO):
            await manager.handle(_message("one?"), RecordingTarget())
            await manager.handle(_message("two?"), RecordingTarget())
    finally:
        caplog.handler.removeFilter(handler_filter)
    failures = [record for record in caplog.records if record.getMessage().startswith("turn=failed")]
    turns = [getattr(record, "turn", "-") for record in failures]
    assert len(turns) == 2
    assert "-" not in turns
    assert turns[0] != turns[1]


async def test_an_admin_sets_what_the_bot_says_in_a_chat_when_nothing_fits(world: ChatWorld) -> None:
    manager, target = _manager(world), RecordingTarget()
    await manager.handle(_message("/fallback Ask the front desk, ext. 100.", user=ADMIN), target)
    assert target.replies()[-1] == messages.fallback_set("Ask the front desk, ext. 100.", "en")
    await manager.handle(_message("Who won the match?"), target)
    await manager.handle(_message("Who won?", key=ConversationKey("test", "team", "elsewhere")), target)
    assert world.answerer.fallback_texts == ["Ask the front desk, ext. 100.", ""]


async def test_a_question_in_chinese_hears_the_fixed_texts_in_chinese(world: ChatWorld) -> None:
    manager, target = _manager(world), RecordingTarget()
    await manager.handle(_message("怎么连接 VPN？"), target)
    (stream,) = target.streams
    assert stream.statuses == [messages.searching("zh")]
    assert stream.finished is not None
    assert stream.finished.language == "zh"
    assert world.answerer.languages == ["zh"]
    await manager.handle(_message("/stop"), target)  # a bare command has no language of its own: English
    assert target.replies()[-1] == messages.nothing_to_stop("en")
    await manager.handle(_message("/kb use 员工手册"), target)
    assert target.replies()[-1] == messages.admins_only("kb use", "zh")


async def test_a_chats_language_is_stored_with_its_settings_and_wins_over_the_message(world: ChatWorld) -> None:
    manager, target = _manager(world), RecordingTarget()
    await manager.handle(_message("/lang zh"), target)  # a private chat: the person chooses
    assert target.replies()[-1] == messages.language_set("zh")
    assert (await world.bindings.setting(DM.platform, DM.workspace, DM.chat)).language == "zh"
    await manager.handle(_message("/stop"), target)
    assert target.replies()[-1] == messages.nothing_to_stop("zh")
    await manager.handle(_message("Which VPN client?"), target)
    assert target.streams[-1].statuses == [messages.searching("zh")]
    await manager.handle(_message("/lang auto"), target)
    assert target.replies()[-1] == messages.language_set("")
    await manager.handle(_message("Which VPN client?"), target)
    assert world.answerer.languages == ["zh", "en"]
    assert (await world.bindings.setting(DM.platform, DM.workspace, DM.chat)).language == ""


async def test_in_a_group_only_an_admin_chooses_the_language_and_only_one_with_a_catalogue(world: ChatWorld) -> None:
    manager, target = _manager(world), RecordingTarget()
    await manager.handle(_message("/lang zh", key=GROUP, private=False), target)
    assert target.replies()[-1] == messages.admins_only("lang", "en")
    await manager.handle(_message("/lang fr", key=GROUP, private=False, user=ADMIN), target)
    assert target.replies()[-1] == messages.usage(USAGE("lang", "en", AN_ADMIN), "en")
    await manager.handle(_message("/lang zh", key=GROUP, private=False, user=ADMIN), target)
    await manager.handle(_message("/help", key=GROUP, private=False), target)
    assert target.replies()[-1].startswith(messages.help_text([], "zh"))
    assert (
        messages.help_text([("/new", messages.command_help("new", "zh"))], "zh").splitlines()[-1]
        in target.replies()[-1]
    )
