"""The conversation manager as every platform uses it: turns stored, ordered, limited, stopped; commands checked.

Real repositories on SQLite and PostgreSQL; the answerer is scripted and the reply target records.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text as sql_text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bot.chat.limits import RateLimit
from bot.chat.manager import ChatPolicy, ConversationManager
from bot.cli.stats import compute_stats
from bot.commands.builtin import default_registry
from bot.commands.registry import Asker
from bot.errors import DeliveryFailed
from bot.ports import ReplyStream
from bot.reply.stream import EditingReplyStream
from bot.types import Attachment, Command, ConversationKey, IncomingMessage, MessageRef, UserRef
from bot.words import messages
from bot.words.catalogue import catalogue
from bot.words.messages import TURN_FAILED
from storage.db import Database
from storage.errors import StorageError
from storage.records import ChunkRecord, ConversationRecord, DocumentVersion
from storage.repos.bindings import BindingRepo
from storage.repos.conversations import ConversationRepo
from storage.repos.faqs import FaqDraft
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from tests.integration.sql_count import count_statements
from tests.support.chat import RecordingTarget, ScriptedAnswerer, wait_until
from tests.support.chat_world import ChatWorld

ADMIN = UserRef("u-admin")
ALICE = UserRef("u-alice")
DM = ConversationKey("test", "team", "dm-alice")
# How commands are written, as the catalogue says it (the one source of it), to a person or an admin in a DM.
USAGE = default_registry().usage
PERSON, AN_ADMIN = Asker(is_admin=False), Asker(is_admin=True)
GROUP = ConversationKey("test", "team", "group-1")
UNCLOSED_QUOTE = catalogue("en").text("command.unclosed_quote")
WEB = ConversationKey("web", "", "s1")
KB_USAGE = "/kb list | /kb use NAME | /kb info [NAME] | /kb create NAME [DESCRIPTION]"
WEB_ADMIN = UserRef("s1", verified_admin=True)


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
    await wait_until(lambda: bool(second_target.sent), second_target.changed)
    assert [q for q, _ in world.answerer.asked] == ["one?"]  # the second waits for the first
    assert second_target.sent == [messages.queued(1, "en")]
    world.answerer.release.set()
    await asyncio.wait_for(asyncio.gather(first, second), 10)
    await wait_until(lambda: bool(second_target.edits), second_target.changed)
    assert second_target.edits == [("sent-1", messages.queue_done("en"))]  # the notice says it is over
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
    for question in ("a?", "b?", "c?", "c2?", "c3?"):
        await manager.handle(_message(question), target)
    assert [q for q, _ in world.answerer.asked] == ["a?", "b?"]
    # One "please wait" for the three over the limit: a flood is not answered message by message.
    assert target.replies()[2:] == [messages.rate_limited(60.0, "en")]
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
        ("/tables on", messages.admins_only("tables", "en")),
        ("/kb use other", messages.admins_only("kb use", "en")),
        ("/kb", messages.usage(USAGE("kb", "en", PERSON), "en")),
        ("/kb list extra", messages.usage(USAGE("kb", "en", PERSON), "en")),
        ("/kb create manual", messages.admins_only("kb create", "en")),
        ("/sources", messages.no_sources("en")),
    ],
)
async def test_commands_answer_bad_or_forbidden_use_with_a_clear_reply(world: ChatWorld, text: str, reply: str) -> None:
    target = RecordingTarget()
    await _manager(world).handle(_message(text), target)
    assert target.replies() == [reply]
    assert world.answerer.asked == []


async def test_only_an_admin_switches_data_analysis_of_the_chat_s_knowledge_base(world: ChatWorld) -> None:
    manager, target = _manager(world), RecordingTarget()
    await manager.handle(_message("/tables on"), target)
    assert target.replies()[-1] == messages.admins_only("tables", "en")
    kb = await world.knowledge.find("handbook")
    assert await world.knowledge.tables_on([kb.id]) == set()
    await manager.handle(_message("/tables on", user=ADMIN), target)
    assert target.replies()[-1] == messages.tables_set("handbook", "en", on=True)
    assert await world.knowledge.tables_on([kb.id]) == {kb.id}
    await manager.handle(_message("/tables on", user=ADMIN), target)  # twice is once
    await manager.handle(_message("/tables off", user=ADMIN), target)
    assert target.replies()[-1] == messages.tables_set("handbook", "en", on=False)
    assert await world.knowledge.tables_on([kb.id]) == set()


async def test_a_file_from_a_non_admin_is_refused_in_their_terms_and_never_read(world: ChatWorld) -> None:
    read: list[str] = []

    async def download() -> bytes:
        read.append("menu.md")
        return b"# Menu"

    file = Attachment("menu.md", 6, "text/markdown", download)
    manager, target = _manager(world), RecordingTarget()
    for text, lang in (("", "en"), ("这是新的菜单", "zh")):
        sent = IncomingMessage(DM, "", ALICE, text, attachments=(file,), command=Command("ingest", implied=True))
        await manager.handle(sent, target)
        assert target.replies()[-1] == messages.files_admins_only(lang)
    await manager.handle(_message("/ingest", attachments=(file,)), target)
    assert target.replies()[-1] == messages.admins_only("ingest", "en")  # typed: the command is named
    assert read == []
    assert await world.job_repo.recent(limit=None) == []


@pytest.mark.parametrize(
    ("text", "reply"),
    [
        ('/faq add "Only a question"', messages.usage(USAGE("faq", "en", AN_ADMIN), "en")),
        ('/faq add " " "an answer"', messages.usage(USAGE("faq", "en", AN_ADMIN, keys=["add"]), "en")),
        ('/faq add "unclosed', f"{UNCLOSED_QUOTE} {messages.usage(USAGE('faq', 'en', AN_ADMIN), 'en')}"),
        ("/ingest", messages.nothing_to_ingest("en")),
        ("/ingest notaurl", messages.not_urls(["notaurl"], "en")),
        ("/faq import", messages.no_faq_sheet("en")),
        ("/kb use missing", messages.kb_use_missing("missing", ["handbook"], "en", create=True)),
        ("/faq delete 1234", messages.faq_missing("1234", "en")),
        ("/faq delete 123", messages.faq_id_too_short(4, "en")),
    ],
)
async def test_admin_commands_with_bad_arguments_say_what_is_wrong(world: ChatWorld, text: str, reply: str) -> None:
    target = RecordingTarget()
    await _manager(world).handle(_message(text, user=ADMIN), target)
    assert target.replies() == [reply]


async def _fill(world: ChatWorld, kb_name: str, documents: int, faqs: int) -> None:
    """Store `documents` one-chunk documents and `faqs` FAQs in the knowledge base, as ingestion would."""
    kb = await world.knowledge.find(kb_name)
    for n in range(documents):
        document_id = str(uuid.uuid4())
        chunk = ChunkRecord(str(uuid.uuid4()), kb.id, document_id, None, 0, 0, 5, "Hours", "hours")
        version = DocumentVersion(kb.id, f"upload:{n}.md", f"{n}.md", "text/markdown", "h", "r", "Hours", (), (chunk,))
        await world.documents.store_versions([(version, document_id)])
    drafts = [FaqDraft(str(uuid.uuid4()), f"Question {n}?", (), (), ("Answer.",), True, "h") for n in range(faqs)]
    await world.faqs.save_many(kb.id, drafts)


@pytest.mark.parametrize(
    ("documents", "faqs", "language", "figures"),
    [
        (3, 15, "en", "3 documents, 15 FAQs"),
        (1, 1, "en", "1 document, 1 FAQ"),
        (0, 0, "en", "0 documents, 0 FAQs"),
        (3, 15, "zh", "3 篇文档，15 条问答"),
    ],
)
async def test_kb_info_counts_documents_and_faqs_in_a_persons_words(
    world: ChatWorld, documents: int, faqs: int, language: str, figures: str
) -> None:
    await _fill(world, "handbook", documents, faqs)
    await world.bindings.save_setting(DM.platform, DM.workspace, DM.chat, language=language)
    target = RecordingTarget()
    await _manager(world).handle(_message("/kb info"), target)
    assert target.replies() == [f"**handbook**\n{figures}"]


# A configuration variable's name (INGEST_MAX_FILE_MB, TELEGRAM_API_BASE_URL): operator words, never a chat's.
SETTING_NAME = re.compile(r"\b[A-Z]+(?:_[A-Z]+)+\b")


@pytest.mark.parametrize(
    ("language", "said"),
    [
        ("en", ["guide.pdf", "60 MB", "50 MB", "An admin of the server can raise"]),
        ("zh", ["guide.pdf", "50 MB", "服务器管理员"]),
    ],
)
async def test_a_file_over_the_size_limit_is_refused_with_the_limit_in_mb_and_who_can_raise_it(
    world: ChatWorld, language: str, said: list[str]
) -> None:
    await world.bindings.save_setting(DM.platform, DM.workspace, DM.chat, language=language)
    target = RecordingTarget()
    huge = Attachment("guide.pdf", 60_000_000, "application/pdf")
    await _manager(world).handle(_message("/ingest", user=ADMIN, attachments=(huge,)), target)
    [reply] = target.replies()
    assert all(words in reply for words in said), reply
    assert SETTING_NAME.search(reply) is None, reply
    assert await world.job_repo.recent(limit=None) == []


async def _finished_job(world: ChatWorld, kind: str, source: str, *, error: str = "", **result: Any) -> None:
    """A job that ran here and ended now: failed with `error`, else succeeded with `result`."""
    kb = await world.knowledge.find("handbook")
    job = await world.job_repo.create(kb.id, kind, source, owner="test", lease=60.0)
    await world.job_repo.start(job.id, "test", lease=60.0)
    if error:
        await world.job_repo.fail(job.id, "test", error)
    else:
        await world.job_repo.succeed(job.id, "test", result)


DAMAGED = (
    "PDF is damaged (Stream has ended unexpectedly while reading the cross-reference table, object 12 0 at byte "
    "18273, which usually means the upload was cut short or the writer crashed before finishing the file). Export "
    "or print it to PDF again from the application that made it, then upload the new file; if it still fails, "
    "send the server log to an admin."
)


async def test_jobs_say_when_name_files_only_and_say_a_repeated_reason_once(world: ChatWorld) -> None:
    await _finished_job(world, "file", "/srv/ragbot/handbook/guide.md", chunks=3)
    for n in range(1, 5):
        await _finished_job(world, "upload", f"/var/lib/ragbot/uploads/{n:032x}/scan{n}.pdf", error=DAMAGED)
    await _finished_job(world, "faq", "/var/lib/ragbot/uploads/f00/faq.csv", created=2, updated=0, unchanged=1)
    world.now = datetime.now(UTC) + timedelta(minutes=5, seconds=10)
    target = RecordingTarget()
    await _manager(world).handle(_message("/jobs", user=ADMIN), target)
    [reply] = target.replies()
    assert reply.splitlines() == [
        "- `faq.csv` → handbook, 5 min ago: FAQ sheet imported: 2 added, 0 updated, 1 unchanged.",
        "- `scan4.pdf`, `scan3.pdf`, `scan2.pdf` and 1 more → handbook, 5 min ago: failed: PDF is damaged (Stream "
        "has ended unexpectedly while reading the cross-reference table, object 12 0 at byte 18273, which usually "
        "means the upload was cut short…",
        "- `guide.md` → handbook, 5 min ago: indexed, 3 passages.",
    ]


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
    assert target.replies()[-1] == messages.kb_use_missing("c", ["a", "b"], "en", create=False)
    await manager.handle(_message("/kb list", key=web), target)
    assert "**b** (in use here)" in target.replies()[-1]
    assert a.id != b.id


async def test_an_admin_creates_the_missing_default_knowledge_base_in_the_chat_and_it_is_read_at_once(
    world: ChatWorld,
) -> None:
    manager, target = _manager(world, default_kbs=("manual",)), RecordingTarget()
    await manager.handle(_message("Which VPN client?"), target)  # resolves the defaults: "manual" is missing
    assert world.answerer.asked[-1][1] == ()
    await manager.handle(_message("/kb create manual Staff rules and forms", user=ADMIN), target)
    assert target.replies()[-1] == messages.kb_created("manual", "en", reading=True)
    manual = await world.knowledge.named("manual")
    assert manual is not None
    assert manual.description == "Staff rules and forms"
    await manager.handle(_message("Which VPN client?"), target)
    assert world.answerer.asked[-1][1] == (manual.id,)
    await manager.handle(_message('/kb create "IT desk"', user=ADMIN), target)
    assert target.replies()[-1] == messages.kb_created("IT desk", "en", reading=False)
    await manager.handle(_message("/kb create 员工手册", user=ADMIN), target)
    assert target.replies()[-1] == messages.kb_created("员工手册", "zh", reading=False)


@pytest.mark.parametrize(
    ("defaults", "user", "text", "reply"),
    [
        ((), ADMIN, "/kb list", messages.kb_list_empty([], "en", admin=True)),
        ((), ALICE, "/kb list", messages.kb_list_empty([], "en", admin=False)),
        (("manual",), ADMIN, "/kb list", messages.kb_list_empty(["manual"], "en", admin=True)),
        (("manual",), ALICE, "/kb list", messages.kb_list_empty(["manual"], "en", admin=False)),
        ((), ADMIN, "/ingest https://example.org/", messages.no_kb_bound([], "en", admin=True)),
        (("manual",), ADMIN, "/ingest https://example.org/", messages.no_kb_bound(["manual"], "en", admin=True)),
        ((), ADMIN, '/faq add "Parking?" "Level 2."', messages.no_kb_bound([], "en", admin=True)),
        (("manual",), ADMIN, "/faq import", messages.no_kb_bound(["manual"], "en", admin=True)),
        ((), ADMIN, "/faq list", messages.no_kb_bound([], "en", admin=True)),
        ((), ADMIN, "/faq delete 123", messages.no_kb_bound([], "en", admin=True)),
        ((), ADMIN, "/jobs", messages.no_kb_bound([], "en", admin=True)),
        (("manual", "it"), ADMIN, "/jobs", messages.no_kb_bound(["manual", "it"], "en", admin=True)),
        (("manual",), ALICE, "/kb info", messages.no_kb_bound(["manual"], "en", admin=False)),
        (("manual",), ADMIN, "/kb use manual", messages.kb_use_missing("manual", [], "en", create=True)),
        ((), ADMIN, '/kb use "IT desk"', messages.kb_use_missing("IT desk", [], "en", create=True)),
    ],
)
async def test_a_chat_without_a_knowledge_base_is_told_the_way_out(
    bare_world: ChatWorld, defaults: tuple[str, ...], user: UserRef, text: str, reply: str
) -> None:
    target = RecordingTarget()
    await _manager(bare_world, default_kbs=defaults).handle(_message(text, user=user), target)
    assert target.replies() == [reply]


def test_the_way_out_names_the_missing_knowledge_base_and_the_command_that_creates_it() -> None:
    assert "/kb create manual" in messages.no_kb_bound(["manual"], "en", admin=True)
    assert "“manual”" in messages.no_kb_bound(["manual"], "en", admin=False)
    assert "ask an admin" in messages.no_kb_bound(["manual"], "en", admin=False).lower()
    assert "/kb create NAME" in messages.no_kb_bound([], "en", admin=True)
    assert "/kb use NAME" in messages.no_kb_bound([], "en", admin=True)
    assert "ask an admin" in messages.no_kb_bound([], "en", admin=False).lower()
    assert "/kb create 'IT desk'" in messages.kb_use_missing("IT desk", [], "en", create=True)


async def test_a_question_in_a_chat_whose_default_knowledge_base_is_missing_says_which_and_how_to_create_it(
    bare_world: ChatWorld,
) -> None:
    manager, target = _manager(bare_world, default_kbs=("manual",)), RecordingTarget()
    await manager.handle(_message("Which VPN client?"), target)
    await manager.handle(_message("Which VPN client?", user=ADMIN, key=GROUP, private=False), target)
    first, second = (stream.finished for stream in target.streams)
    assert first is not None
    assert second is not None
    assert first.notice == messages.no_kb_bound(["manual"], "en", admin=False)
    assert second.notice == messages.no_kb_bound(["manual"], "en", admin=True)
    await manager.handle(_message("/kb create manual", user=ADMIN), target)
    await manager.handle(_message("Which VPN client?"), target)
    last = target.streams[-1].finished
    assert last is not None
    assert last.notice == ""


@pytest.mark.parametrize(
    ("text", "reply"),
    [
        ("/kb create", messages.usage(KB_USAGE, "en")),
        ('/kb create ""', messages.kb_bad_name(64, "en")),
        ("/kb create " + "x" * 65, messages.kb_bad_name(64, "en")),
        ("/kb create handbook", messages.kb_exists("handbook", "en")),
        ("/kb create 手册 说明", messages.kb_created("手册", "zh", reading=False)),
    ],
)
async def test_kb_create_names_follow_the_cli_rules(world: ChatWorld, text: str, reply: str) -> None:
    target = RecordingTarget()
    await _manager(world).handle(_message(text, user=ADMIN), target)
    assert target.replies() == [reply]
    assert [kb.name for kb in await world.knowledge.all()].count("handbook") == 1


@pytest.mark.parametrize(
    ("allowed", "name", "reply"),
    [
        (("a", "b"), "c", messages.kb_create_not_allowed("c", ("a", "b"), "en")),
        ((), "c", messages.kb_create_not_allowed("c", (), "en")),
        (("a", "b"), "b", messages.kb_created("b", "en", reading=False)),
        (("a", "b"), "a", messages.kb_created("a", "en", reading=True)),
    ],
)
async def test_on_the_web_an_admin_creates_only_knowledge_bases_the_web_chat_may_read(
    world: ChatWorld, allowed: tuple[str, ...], name: str, reply: str
) -> None:
    manager, target = _manager(world, default_kbs=("a",), allowed_kbs={"web": allowed}), RecordingTarget()
    await manager.handle(_message(f"/kb create {name}", key=WEB, user=WEB_ADMIN), target)
    assert target.replies() == [reply]
    created = await world.knowledge.named(name)
    assert (created is not None) == (name in allowed)


@pytest.mark.parametrize(
    ("user", "text", "reply"),
    [
        (ALICE, "/kb use other", messages.kb_use_missing("other", ["a"], "en", create=False)),
        (ALICE, "/kb use b", messages.kb_use_missing("b", ["a"], "en", create=False)),
        (ALICE, "/kb use handbook", messages.kb_not_allowed("handbook", "en")),
        (WEB_ADMIN, "/kb use other", messages.kb_use_missing("other", ["a"], "en", create=False)),
        (WEB_ADMIN, "/kb use b", messages.kb_use_missing("b", ["a"], "en", create=True)),
        (WEB_ADMIN, "/kb use handbook", messages.kb_not_allowed("handbook", "en")),
        (ALICE, "/kb info other", messages.kb_missing("other", "en")),
        (ALICE, "/kb info handbook", messages.kb_not_allowed("handbook", "en")),
    ],
)
async def test_on_the_web_a_knowledge_base_that_does_not_exist_is_not_called_forbidden(
    world: ChatWorld, user: UserRef, text: str, reply: str
) -> None:
    await world.knowledge.create("a", {})
    manager, target = _manager(world, default_kbs=("a",), allowed_kbs={"web": ("a", "b")}), RecordingTarget()
    await manager.handle(_message(text, key=WEB, user=user), target)
    assert target.replies() == [reply]


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
    assert parse_command("/faq add 'open").error == "command.unclosed_quote"  # type: ignore[union-attr]


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


async def test_reading_rating_stopping_or_starting_over_a_chat_never_spoken_in_stores_no_conversation(
    world: ChatWorld,
) -> None:
    manager, target = _manager(world), RecordingTarget()
    strangers = [ConversationKey("test", "team", f"stranger-{n}", "") for n in range(5)]
    await manager.transcript(strangers[0], 50)
    await manager.last_sources(strangers[1])
    assert await manager.feedback(strangers[2], "no-such-answer", "down") is None
    await manager.reset(strangers[3])
    for command in ("/stop", "/new", "/sources"):
        await manager.handle(_message(command, key=strangers[4], message_id=command), target)
    assert target.replies()[0] == messages.nothing_to_stop("en")
    for key in strangers:
        assert await world.conversations.find(key.platform, key.workspace, key.chat, key.thread) is None


async def test_a_warm_turn_reads_once_and_writes_twice(world: ChatWorld, db: Database) -> None:
    kb = await world.knowledge.named("handbook")
    assert kb is not None
    vpn = DocumentVersion(kb.id, "https://intranet.example/vpn", "VPN", "text/html", "h", "r", "The VPN", (), ())
    await world.documents.store_versions([(vpn, "doc-vpn")])  # the scripted answer's source
    manager = _manager(world)
    await manager.handle(_message("Which VPN client?", message_id="m1"), RecordingTarget())  # the chat is now known
    with count_statements(db) as statements:
        target = RecordingTarget()
        assert await manager.handle(_message("And on a Mac?", message_id="m2"), target) is not None
    kinds = [statement.split(None, 1)[0].upper() for statement in statements]
    # The question with its placeholder (stored before the turn waits, so no process's death loses it), one read
    # (the config epoch beside the history), the final answer.
    assert kinds == ["INSERT", "SELECT", "UPDATE"], statements
    assert "config_epoch" in statements[1]
    (stream,) = target.streams
    assert stream.finished is not None
    assert [source.url for source in stream.finished.sources] == ["https://intranet.example/vpn"]


class _UndeliverableTarget(RecordingTarget):
    """A chat the bot was removed from: every call is refused for good."""

    def open_stream(self) -> ReplyStream:
        return EditingReplyStream(self)

    async def send(self, text: str, *, markup: bool = True) -> MessageRef:
        raise DeliveryFailed("bot was kicked from the group chat")


async def test_an_answer_the_chat_never_showed_is_stored_undelivered_and_is_no_history(world: ChatWorld) -> None:
    manager = _manager(world)
    result = await manager.handle(_message("Which VPN client?"), _UndeliverableTarget())
    assert result is not None
    _, answer = await _stored(world, DM)
    assert (answer.status, answer.text) == ("undelivered", "The VPN client.")
    assert manager.metrics.sample("ragbot_chat_turns_total", platform=DM.platform, outcome="undelivered") == 1
    await manager.handle(_message("And on a Mac?"), RecordingTarget())
    history = world.answerer.histories[-1]
    assert history is not None
    assert [(m.role, m.status) for m in history] == [("user", "done"), ("assistant", "undelivered")]
    stats = compute_stats(await _stored(world, DM))
    assert stats.outcomes["undelivered"] == 1


class _SlowFirstLookup(ConversationRepo):
    """The store's first lookup of a conversation is slow (a cold cache, a busy database) until released."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.release = asyncio.Event()
        self.waiting = asyncio.Event()

    async def find(self, platform: str, workspace: str, chat: str, thread: str = "") -> ConversationRecord | None:
        if not self.waiting.is_set():
            self.waiting.set()
            await asyncio.wait_for(self.release.wait(), 10)
        return await super().find(platform, workspace, chat, thread)


async def test_two_quick_messages_are_answered_in_the_order_they_were_sent(world: ChatWorld, db: Database) -> None:
    slow = world.conversations = _SlowFirstLookup(db)
    manager = _manager(world, queue_notice_after=0.0)
    first_target, second_target = RecordingTarget(), RecordingTarget()
    first = asyncio.create_task(manager.handle(_message("one?"), first_target))
    await asyncio.wait_for(slow.waiting.wait(), 10)
    second = asyncio.create_task(manager.handle(_message("two?"), second_target))
    # The second has arrived (typing is shown the moment it does) while the first is still being stored: it waits
    # behind the first, or, wrongly, is stored and answered before it.
    await asyncio.wait_for(second_target.typed.wait(), 10)
    slow.release.set()
    await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert [q for q, _ in world.answerer.asked] == ["one?", "two?"]
    assert [m.text for m in await _stored(world, DM) if m.role == "user"] == ["one?", "two?"]


async def test_a_default_knowledge_base_made_anew_is_read_on_the_next_turn(world: ChatWorld, db: Database) -> None:
    manager = _manager(world)
    await manager.handle(_message("Which VPN client?"), RecordingTarget())
    old = await world.knowledge.named("handbook")
    assert old is not None
    await KnowledgeBaseRepo(db).delete(old.id)
    new = await world.knowledge.create("handbook", {})
    await manager.handle(_message("Which VPN client?"), RecordingTarget())
    assert [kb_ids for _, kb_ids in world.answerer.asked] == [(old.id,), (new.id,)]


async def test_a_binding_made_on_another_instance_is_read_on_the_next_turn(world: ChatWorld, db: Database) -> None:
    here = _manager(world)
    await here.handle(_message("Which VPN client?"), RecordingTarget())
    manual = await world.knowledge.create("manual", {})
    await BindingRepo(db).bind(DM.platform, DM.workspace, DM.chat, [manual.id])  # another process's /kb use
    await here.handle(_message("Which VPN client?"), RecordingTarget())
    assert world.answerer.asked[-1][1] == (manual.id,)


async def _drop_every_connection(db: Database) -> int:
    """What a PostgreSQL restart does to the pool: every connection of this database ends, server side."""
    killer = create_async_engine(db.config.async_url(), poolclass=NullPool)
    try:
        async with killer.connect() as connection:
            ended = await connection.execute(
                sql_text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
            return len(ended.all())
    finally:
        await killer.dispose()


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_turn_in_flight_when_postgresql_drops_its_connections_apologises_and_later_ones_succeed(
    world: ChatWorld, db: Database
) -> None:
    world.answerer = ScriptedAnswerer(["The VPN ", "|", "client."])
    manager = _manager(world)
    in_flight_target = RecordingTarget()
    in_flight = asyncio.create_task(manager.handle(_message("Which VPN client?"), in_flight_target))
    await asyncio.wait_for(world.answerer.holding.wait(), 10)
    assert await _drop_every_connection(db) >= 1
    world.answerer.release.set()
    await asyncio.wait_for(in_flight, 30)
    # Its next statement met a dead connection (no pre-ping spends a round trip on every checkout to avoid that).
    (shown,) = in_flight_target.replies()
    assert shown in (TURN_FAILED, "The VPN client.")
    for question in ("And on a Mac?", "And on Linux?"):
        later = RecordingTarget()
        assert await asyncio.wait_for(manager.handle(_message(question), later), 30) is not None
        assert later.replies() == ["The VPN client."]
    stored = await _stored(world, DM)
    first = "failed" if shown == TURN_FAILED else "done"
    assert [m.status for m in stored if m.role == "assistant"] == [first, "done", "done"]
