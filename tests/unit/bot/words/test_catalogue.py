"""The bot speaks the asker's language: complete catalogues, every fixed message in each, the language of a turn."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any, get_args

import pytest

from adapters.slack import words as slack_words
from adapters.slack.render import sources_block
from adapters.telegram import words as telegram_words
from bot.chat.feedback import REASONS
from bot.commands.builtin import default_registry
from bot.commands.registry import Asker, CommandSpec, parse_command
from bot.errors import UserFacingError
from bot.types import Answer, CommandStyle, SourceLink
from bot.words import catalogue as i18n
from bot.words import messages
from bot.words.language import turn_language
from rag.input_check import Refusal, SmallTalk
from rag.language import language_of
from storage.records import JobRecord, JobStatus, ScheduleRecord

ENGLISH = i18n.catalogue("en")
SLACK = CommandStyle(prefix="/kb ", bare="kb", attachments=False, files_note="slack.files")
OTHERS = [code for code in i18n.languages() if code != "en"]


def _job(status: JobStatus, kind: str = "upload", result: dict[str, Any] | None = None) -> JobRecord:
    return JobRecord(
        id="j1",
        kb_id="kb",
        kind=kind,
        source="/data/uploads/abc/guide.pdf",
        status=status,
        stage="embed",
        done=3,
        total=10,
        error="not a PDF",
        requested_by="u1",
        requested_from={},
        result={"chunks": 12, "segments": 3} if result is None else result,
        attempts=1,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        started_at=None,
        finished_at=None,
    )


# Every chat message of bot.words.messages that takes a language, with example values: "function" or "function:case".
def _schedule(last_outcome: str = "", failures: int = 0) -> ScheduleRecord:
    return ScheduleRecord(
        id="s",
        kind="url_sync",
        kb_id="kb",
        source="https://example.com/a",
        every_seconds=86_400,
        created_by="u",
        requested_from={},
        etag="",
        last_modified="",
        conditional_runs=0,
        last_run_at=None,
        last_outcome=last_outcome,
        failures=failures,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


FIXED: dict[str, Callable[[str], str]] = {
    "turn_failed": messages.turn_failed,
    "searching": messages.searching,
    "question_cut": messages.question_cut,
    "stopped_note": messages.stopped_note,
    "interrupted_note": messages.interrupted_note,
    "timed_out_note": messages.timed_out_note,
    "resumed": messages.resumed,
    "nothing_to_stop": messages.nothing_to_stop,
    "stopping": messages.stopping,
    "new_conversation": messages.new_conversation,
    "about_question": lambda lang: messages.about_question("How do I reset my VPN password?", lang),
    "no_answer": messages.no_answer,
    "refusal:empty": lambda lang: messages.refusal("empty", lang),
    "refusal:unreadable": lambda lang: messages.refusal("unreadable", lang),
    "small_talk:greeting": lambda lang: messages.small_talk("greeting", lang),
    "small_talk:thanks": lambda lang: messages.small_talk("thanks", lang),
    "user_message": lambda lang: messages.user_message(
        UserFacingError(messages.index_rebuilding(), in_language=messages.index_rebuilding), lang
    ),
    "rate_limited": lambda lang: messages.rate_limited(12.4, lang),
    "queued:next": lambda lang: messages.queued(1, lang),
    "queued": lambda lang: messages.queued(3, lang),
    "queue_done": messages.queue_done,
    "busy_place": lambda lang: messages.busy_place(3, lang),
    "busy_place:next": lambda lang: messages.busy_place(1, lang),
    "busy_done": messages.busy_done,
    "sources_heading": messages.sources_heading,
    "source_title:page": lambda lang: messages.source_title(SourceLink(1, "handbook.pdf", page=3), lang),
    "format_sources": lambda lang: messages.format_sources([SourceLink(1, "guide.pdf")], lang),
    "format_source": lambda lang: messages.format_source(SourceLink(1, "scan.pdf", page=2), lang),
    "no_kb_bound": lambda lang: messages.no_kb_bound([], lang, admin=True),
    "no_kb_bound:other": lambda lang: messages.no_kb_bound([], lang, admin=False),
    "no_kb_bound:missing": lambda lang: messages.no_kb_bound(["handbook"], lang, admin=True),
    "no_kb_bound:missing_several": lambda lang: messages.no_kb_bound(["a", "b"], lang, admin=True),
    "no_kb_bound:missing_other": lambda lang: messages.no_kb_bound(["handbook"], lang, admin=False),
    "no_kb_bound:missing_several_other": lambda lang: messages.no_kb_bound(["a", "b"], lang, admin=False),
    "kb_list_empty": lambda lang: messages.kb_list_empty([], lang, admin=True),
    "kb_list_empty:other": lambda lang: messages.kb_list_empty([], lang, admin=False),
    "kb_list_empty:missing": lambda lang: messages.kb_list_empty(["handbook"], lang, admin=True),
    "kb_use_missing": lambda lang: messages.kb_use_missing("x", [], lang, create=True),
    "kb_use_missing:choose": lambda lang: messages.kb_use_missing("x", ["a", "b"], lang, create=False),
    "kb_use_missing:none": lambda lang: messages.kb_use_missing("x", [], lang, create=False),
    "no_sources": messages.no_sources,
    "no_jobs": messages.no_jobs,
    "nothing_to_ingest": messages.nothing_to_ingest,
    "nothing_to_ingest:slack": lambda lang: messages.nothing_to_ingest(lang, SLACK),
    "no_faq_sheet": messages.no_faq_sheet,
    "no_faq_sheet:slack": lambda lang: messages.no_faq_sheet(lang, SLACK),
    "files_note": lambda lang: messages.files_note(lang, SLACK),
    "usage": lambda lang: messages.usage(default_registry().usage("kb", lang, Asker(is_admin=True)), lang),
    "form_usage": lambda lang: messages.form_usage("ingest", "files", "/ingest", lang),
    "command_help": lambda lang: messages.command_help("sources", lang),
    "unknown_command": lambda lang: messages.unknown_command("frobnicate", lang),
    "unknown_command:suggested": lambda lang: messages.unknown_command("jbos", lang, SLACK, suggestion="/kb jobs"),
    "admins_only": lambda lang: messages.admins_only("ingest", lang),
    "files_admins_only": messages.files_admins_only,
    "admins_only:slack": lambda lang: messages.admins_only("kb use", lang, SLACK),
    "help_text": lambda lang: messages.help_text([("/new", messages.command_help("new", lang))], lang),
    "greeting": lambda lang: messages.greeting(["handbook", "it"], lang),
    "greeting:no_kb": lambda lang: messages.greeting([], lang),
    "mode_set:all": lambda lang: messages.mode_set("all", lang),
    "mode_set:mention": lambda lang: messages.mode_set("mention", lang),
    "web_search_set:on": lambda lang: messages.web_search_set(True, lang),
    "web_search_set:off": lambda lang: messages.web_search_set(False, lang),
    "web_search_unavailable": messages.web_search_unavailable,
    "fallback_set": lambda lang: messages.fallback_set("Call 100.", lang),
    "fallback_set:default": lambda lang: messages.fallback_set("", lang),
    "language_set": messages.language_set,
    "kb_list": lambda lang: messages.kb_list([("handbook", "HR rules", True), ("it", "", False)], lang),
    "kb_list:empty": lambda lang: messages.kb_list([], lang),
    "kb_missing": lambda lang: messages.kb_missing("x", lang),
    "kb_not_allowed": lambda lang: messages.kb_not_allowed("x", lang),
    "kb_only_shared": lambda lang: messages.kb_only_shared("x", lang),
    "kb_now_using": lambda lang: messages.kb_now_using("x", lang),
    "kb_info": lambda lang: messages.kb_info("x", "HR", {"documents": 2, "chunks": 9, "faqs": 1}, lang),
    "jobs_list": lambda lang: messages.jobs_list(
        [_job("running"), _job("queued"), _job("failed"), _job("failed"), _job("succeeded")],
        {"kb": "x"},
        datetime(2026, 1, 3, tzinfo=UTC),
        lang,
    ),
    "bad_every": lambda lang: messages.bad_every("soon", lang),
    "every_out_of_bounds": lambda lang: messages.every_out_of_bounds("1m", 900, 86_400, lang),
    "every_urls_only": messages.every_urls_only,
    "every_credentials": messages.every_credentials,
    "url_scheduled": lambda lang: messages.url_scheduled(86_400, lang),
    "sync_gone": lambda lang: messages.sync_gone("https://example.com/a", 404, lang),
    "sync_failing": lambda lang: messages.sync_failing("https://example.com/a", 3, "failed: timed out", lang),
    "schedules_list": lambda lang: messages.schedules_list([_schedule()], {"kb": "x"}, lang),
    "schedules_list:ran": lambda lang: messages.schedules_list(
        [
            _schedule(last_outcome="updated: 3 chunks"),
            _schedule(last_outcome="not modified"),
            _schedule(last_outcome="failed: 503", failures=1),
            _schedule(last_outcome="failed: 503", failures=3),
        ],
        {"kb": "x"},
        lang,
    ),
    "sync_queued": lambda lang: messages.sync_queued(2, lang),
    "sync_queued:one": lambda lang: messages.sync_queued(1, lang),
    "sync_nothing": messages.sync_nothing,
    "sync_default_set": lambda lang: messages.sync_default_set("x", 86_400, 2, lang),
    "sync_default_off": lambda lang: messages.sync_default_off("x", lang),
    "tables_set": lambda lang: messages.tables_set("x", lang, on=True),
    "tables_set:off": lambda lang: messages.tables_set("x", lang, on=False),
    "graph_building": lambda lang: messages.graph_building("x", lang),
    "graph_on": lambda lang: messages.graph_on("x", 3, 40, lang),
    "graph_off": lambda lang: messages.graph_off("x", lang),
    "graph_unavailable": lambda lang: messages.graph_unavailable(lang),
    "kb_created": lambda lang: messages.kb_created("x", lang, reading=False),
    "kb_created:reading": lambda lang: messages.kb_created("x", lang, reading=True),
    "kb_exists": lambda lang: messages.kb_exists("x", lang),
    "kb_bad_name": lambda lang: messages.kb_bad_name(64, lang),
    "kb_create_not_allowed": lambda lang: messages.kb_create_not_allowed("x", ("a", "b"), lang),
    "kb_create_not_allowed:none": lambda lang: messages.kb_create_not_allowed("x", (), lang),
    "faq_added": lambda lang: messages.faq_added("x", lang, created=True),
    "faq_added:updated": lambda lang: messages.faq_added("x", lang, created=False),
    "faq_list": lambda lang: messages.faq_list("x", [("f1234567890", "Q?"), ("f2", "Q2?")], 1, lang),
    "faq_list:empty": lambda lang: messages.faq_list("x", [], 20, lang),
    "faq_missing": lambda lang: messages.faq_missing("123", lang),
    "faq_ambiguous": lambda lang: messages.faq_ambiguous("12", lang),
    "faq_id_too_short": lambda lang: messages.faq_id_too_short(4, lang),
    "faq_deleted": lambda lang: messages.faq_deleted("Q?", lang),
    "not_urls": lambda lang: messages.not_urls(["foo"], lang),
    "file_too_large": lambda lang: messages.file_too_large("a.pdf", 30_000_000, 20_000_000, lang),
    "file_too_large:unread": lambda lang: messages.file_too_large("a.pdf", None, 20_000_000, lang),
    "file_unreadable": lambda lang: messages.file_unreadable("a.pdf", lang),
    "ingest_queued": lambda lang: messages.ingest_queued(2, "x", lang),
    "ingest_progress": lambda lang: messages.ingest_progress(
        [_job("queued"), _job("running"), _job("running", "faq"), _job("succeeded")], lang
    ),
    "job_result": lambda lang: messages.job_result(_job("succeeded", "faq", {"created": 2}), lang),
    "job_result:unchanged": lambda lang: messages.job_result(
        _job("succeeded", result={"chunks": 1, "unchanged": True}), lang
    ),
    "job_result:indexed": lambda lang: messages.job_result(_job("succeeded"), lang),
    "job_result:ocr": lambda lang: messages.job_result(
        _job("succeeded", "upload", {"chunks": 40, "ocr_pages": 1, "ocr_unread_pages": 2}), lang
    ),
    "job_result:failed": lambda lang: messages.job_result(_job("failed"), lang),
    "job_result:faq_failed": lambda lang: messages.job_result(_job("failed", "faq"), lang),
    "ingest_outcome": lambda lang: messages.ingest_outcome(
        [_job("succeeded"), _job("succeeded", result={"unchanged": True}), _job("succeeded", "faq"), _job("failed")],
        lang,
    ),
    "ingest_outcome:one": lambda lang: messages.ingest_outcome([_job("succeeded")], lang),
    "failure": lambda lang: messages.failure(
        _job("failed", result={"failure": {"reason": "too_large", "details": {"size": 6_000_000, "max_size": 10}}}),
        lang,
    ),
    "failure:faq": lambda lang: messages.failure(
        _job("failed", "faq", {"failure": {"reason": "faq_sheet", "problems": [[3, "no_answer", {}]], "more": 2}}),
        lang,
    ),
    "index_rebuilding": messages.index_rebuilding,
    "feedback_thanks:up": lambda lang: messages.feedback_thanks("up", lang),
    "feedback_thanks:down": lambda lang: messages.feedback_thanks("down", lang),
    "feedback_gone": messages.feedback_gone,
    "media_heard": lambda lang: messages.media_heard("where is lunch", lang),
    "media_read": lambda lang: messages.media_read("ERROR 42", lang),
    "media_seen": lambda lang: messages.media_seen("A dialog", lang),
    "no_transcription": messages.no_transcription,
    "no_image_reader": messages.no_image_reader,
    "heard_nothing": messages.heard_nothing,
    "no_text_in_image": messages.no_text_in_image,
    "audio_too_long": lambda lang: messages.audio_too_long(3600, 600, lang),
    "media_too_large": lambda lang: messages.media_too_large("a.png", 30_000_000, 20_000_000, lang),
    "media_too_large:unread": lambda lang: messages.media_too_large("a.png", None, 20_000_000, lang),
    "not_an_image": lambda lang: messages.not_an_image("a.png", lang),
    "media_unreadable": lambda lang: messages.media_unreadable("a.png", lang),
    "media_unreadable:unknown_reason": lambda lang: messages.media_unreadable("a.png", lang, "no_such_reason", {}),
    "media_too_slow": messages.media_too_slow,
    "media_too_many": lambda lang: messages.media_too_many(4, lang),
    "feedback_ask_why": messages.feedback_ask_why,
    "feedback_why_form": lambda lang: " | ".join(messages.feedback_why_form(lang).values()),
    **{f"feedback_reason:{r}": (lambda lang, r=r: messages.feedback_reason(r, lang)) for r in REASONS},  # type: ignore[misc]
    "feedback_noted": lambda lang: messages.feedback_noted("outdated", lang),
    **{
        f"feedback_reason_refused:{why}": (lambda lang, why=why: messages.feedback_reason_refused(why, lang, 500))  # type: ignore[misc]
        for why in ("not_down", "not_rater", "too_long", "unknown", "gone")
    },
    "stats_bad_days": lambda lang: messages.stats_bad_days(365, lang),
    "stats_unavailable": messages.stats_unavailable,
    "stats_report": lambda lang: messages.stats_report(
        7,
        (42, 5, 3),
        (("unanswered", 14, [(12, "How do I use the VPN on my phone?", "")]), ("disliked", 3, [(2, "Lunch?", "x 2")])),
        lang,
    ),
    "stats_report:quiet": lambda lang: messages.stats_report(1, (0, 0, 0), (("unanswered", 0, []),), lang),
}


def _han(text: str) -> bool:
    return any("\u4e00" <= char <= "\u9fff" for char in text)


@pytest.mark.parametrize("language", OTHERS)
def test_every_catalogue_has_every_english_message_with_the_same_placeholders(language: str) -> None:
    other = i18n.catalogue(language)
    assert other.language == language
    assert set(other.entries) == set(ENGLISH.entries)
    for message_id, template in ENGLISH.entries.items():
        assert i18n.placeholders(other.entries[message_id]) == i18n.placeholders(template), message_id


def test_english_and_chinese_are_shipped_and_named_in_their_own_language() -> None:
    assert {"en", "zh"} <= set(i18n.languages())
    assert (i18n.catalogue("en").name, i18n.catalogue("zh").name) == ("English", "中文")


# What each platform says itself (adapters/*/words.py, texts in adapters/*/locales), checked the same way.
PLATFORM_SAYS: dict[str, Callable[[str], str]] = {
    "telegram.file_too_big": lambda lang: telegram_words.file_too_big("a.pdf", 20_000_000, lang),
    "telegram.text_only": telegram_words.text_only,
    "slack.status": slack_words.status,
    "slack.empty_mention": lambda lang: slack_words.empty_mention(lang, SLACK),
    "slack.not_in_channel": slack_words.not_in_channel,
    "slack.archived": slack_words.archived,
    "slack.asked": lambda lang: slack_words.asked("U1", "VPN?", lang),
    "slack.file_login_page": lambda lang: slack_words.file_login_page("a.pdf", lang),
    "slack.file_missing": lambda lang: slack_words.file_missing("a.pdf", lang),
    "slack.prompts_heading": slack_words.prompts_heading,
    "slack.home_title": slack_words.home_title,
    "slack.home_how": lambda lang: slack_words.home_how(lang, SLACK),
    "slack.home_kbs": slack_words.home_kbs,
    "slack.home_no_kbs": lambda lang: slack_words.home_no_kbs(lang, SLACK),
    "slack.home_commands": slack_words.home_commands,
}


def test_every_function_of_messages_that_takes_a_language_is_tested_here() -> None:
    speaking = {
        name
        for name, function in inspect.getmembers(messages, inspect.isfunction)
        if function.__module__ == messages.__name__
        and not name.startswith("_")
        and "lang" in inspect.signature(function).parameters
    }
    tested = {case.split(":")[0] for case in FIXED}
    assert speaking == tested


@pytest.mark.parametrize("message", sorted(FIXED | PLATFORM_SAYS))
def test_each_fixed_message_is_said_in_english_and_in_chinese(message: str) -> None:
    says = (FIXED | PLATFORM_SAYS)[message]
    english, chinese = says("en"), says("zh")
    assert english.strip()
    assert chinese.strip()
    assert not _han(english), english
    assert _han(chinese), chinese
    assert english != chinese


def test_a_message_of_a_language_without_a_catalogue_is_in_english() -> None:
    assert messages.stopping("xx") == messages.stopping("en")


@pytest.mark.parametrize("reason", get_args(Refusal))
def test_each_reason_the_input_check_refuses_is_worded_in_every_language(reason: Refusal) -> None:
    assert not _han(messages.refusal(reason, "en"))
    assert language_of(messages.refusal(reason, "zh")) == "zh"


@pytest.mark.parametrize("kind", get_args(SmallTalk))
def test_the_reply_to_small_talk_says_what_the_bot_is_for_in_every_language(kind: SmallTalk) -> None:
    assert not _han(messages.small_talk(kind, "en"))
    assert language_of(messages.small_talk(kind, "zh")) == "zh"
    assert "ragbot" in messages.small_talk("greeting", "en")


def test_an_error_that_names_its_text_is_told_in_the_chats_language_and_one_that_does_not_as_it_is() -> None:
    rebuilding = UserFacingError(messages.index_rebuilding(), in_language=messages.index_rebuilding)
    assert messages.user_message(rebuilding, "zh") == messages.index_rebuilding("zh")
    assert _han(messages.index_rebuilding("zh"))
    assert messages.user_message(UserFacingError("No document 'x' in 'kb'."), "zh") == "No document 'x' in 'kb'."


def test_an_unclosed_quote_is_told_in_the_chats_language() -> None:
    command = parse_command("/faq add 'open")
    assert command is not None
    assert not _han(ENGLISH.text(command.error))
    assert _han(i18n.catalogue("zh").text(command.error))


def test_every_built_in_command_has_its_help_and_each_of_its_forms_in_the_catalogue_and_nothing_else_does() -> None:
    registry = default_registry()
    forms = set()
    for spec in registry.visible_to(Asker(is_admin=True)):
        assert f"help.{spec.name}" in ENGLISH.entries, spec.name
        forms |= {f"usage.{spec.name}.{form.key}" for form in spec.forms if form.key and not form.literal}
    assert forms == {message_id for message_id in ENGLISH.entries if message_id.startswith("usage.")}
    # The catalogue is the one source: registration names a command, its rights and its forms, no text.
    assert {field.name for field in fields(CommandSpec)} == {"name", "admin", "forms", "handler", "listed"}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_commands_usage_is_its_forms_as_the_catalogue_writes_them(lang: str) -> None:
    words = i18n.catalogue(lang)
    registry = default_registry()
    kb = ["/kb list", *(words.text(f"usage.kb.{form}", command="/kb") for form in ("use", "info", "create"))]
    admin = Asker(is_admin=True)
    assert registry.usage("kb", lang, admin) == " | ".join(kb)
    assert registry.usage("faq", lang, admin, keys=["add"]) == words.text("usage.faq.add", command="/faq")
    codes = " | ".join(f"/lang {code}" for code in i18n.languages())
    assert registry.usage("lang", lang, admin) == f"/lang auto | {codes}"


@pytest.mark.parametrize(
    ("text", "override", "language"),
    [
        ("怎么重置密码？", "", "zh"),
        ("VPN 怎么连接", "", "zh"),
        ("How do I use 知识库?", "", "en"),
        ("How do I reset my password?", "", "en"),
        ("", "", "en"),
        ("How do I reset my password?", "zh", "zh"),
        ("怎么重置密码？", "en", "en"),
        ("怎么重置密码？", "xx", "zh"),  # an override without a catalogue (removed since) is ignored
    ],
)
def test_a_turn_is_in_the_chats_language_else_in_the_language_of_the_message(
    text: str, override: str, language: str
) -> None:
    assert turn_language(text, override) == language


@pytest.mark.parametrize(
    ("text", "override", "app_language", "language"),
    [
        ("", "", "zh-hans", "zh"),  # `/start` from a phone set to Chinese
        ("", "", "ZH", "zh"),
        ("", "", "fr", "en"),  # no catalogue for the app's language
        ("", "en", "zh-hans", "en"),  # the chat's choice wins
        ("How do I reset my password?", "", "zh-hans", "en"),  # words written win over the app's setting
        ("怎么重置密码？", "", "en", "zh"),
    ],
)
def test_text_without_letters_is_in_the_language_of_the_persons_app(
    text: str, override: str, app_language: str, language: str
) -> None:
    assert turn_language(text, override, app_language) == language


def test_the_sources_heading_follows_the_answers_language_in_markdown_and_on_slack() -> None:
    sources = (SourceLink(1, "guide.pdf"),)
    assert "**来源**" in messages.answer_with_sources(Answer("答案", sources, language="zh"))
    assert "**Sources**" in messages.answer_with_sources(Answer("Answer", sources))
    block = sources_block(sources, "zh")
    assert block is not None
    assert block["elements"][0]["text"] == "*来源:*"


def test_a_source_with_a_page_shows_it_in_the_answers_language_and_one_without_shows_its_title_alone() -> None:
    scanned, typed = SourceLink(1, "scan.pdf", page=12), SourceLink(2, "guide.md")
    assert "- [1] scan.pdf, p. 12\n- [2] guide.md" in messages.answer_with_sources(Answer("Answer", (scanned, typed)))
    assert "- [1] scan.pdf，第 12 页" in messages.answer_with_sources(Answer("答案", (scanned,), language="zh"))
    block = sources_block((scanned,), "en")
    assert block is not None
    assert block["elements"][1]["text"] == "[1] scan.pdf, p. 12"


def test_lang_is_confirmed_in_the_language_chosen() -> None:
    assert messages.language_set("zh") == "我会在这里用中文回复。"
    assert messages.language_set("en") == "I'll reply here in English."
    assert messages.language_set("") == "I'll reply here in the language of each message."


def test_a_platforms_texts_are_in_every_catalogue_and_may_not_take_an_id_of_ragbots() -> None:
    core = i18n._read("bot.words", "en")
    for package in i18n._platform_packages():
        ids = {message_id for message_id, _ in i18n._flatten(i18n._read(package, "en"))}
        assert ids, package
        assert ids <= set(ENGLISH.entries)
        assert not ids & {message_id for message_id, _ in i18n._flatten(core)}, package
