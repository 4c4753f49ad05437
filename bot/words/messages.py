"""Every fixed thing the bot says to a person, in the language of the turn, and how sources are written under it.

The texts of chat replies live in the catalogues (bot/words/locales/<code>.toml, read through
bot.words.catalogue); each function here takes the turn's language code (`lang`) and fills one in. What only an
operator reads (CLI output, logs, HTTP errors of the web API) stays English and is written here directly.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any, Final

from bot.errors import UserFacingError
from bot.types import SLASH_COMMANDS, Answer, CommandStyle, SourceLink, web_url
from bot.words.catalogue import DEFAULT_LANGUAGE, catalogue
from bot.words.table import monospace_table
from rag.input_check import Refusal, SmallTalk
from storage.records import JobRecord, ScheduleRecord

# English texts for callers that reply before any turn has a language (adapters).
TURN_FAILED: Final = catalogue(DEFAULT_LANGUAGE).text("turn.failed")
# How much of a question a reply quotes back to name it.
_QUOTED: Final = 80


def refusal(reason: Refusal, lang: str) -> str:
    """Why a question cannot be answered (rag.input_check's reason), in `lang`."""
    return catalogue(lang).text(f"refusal.{reason}")


def small_talk(kind: SmallTalk, lang: str) -> str:
    """The reply to a greeting or thanks alone (rag.input_check's kind), saying what the bot is for, in `lang`."""
    return catalogue(lang).text(f"smalltalk.{kind}")


def user_message(error: UserFacingError, lang: str) -> str:
    """What a person is told of an error raised for them, in `lang` where its raiser said how."""
    return error.message_in(lang)


# Turns
def turn_failed(lang: str) -> str:
    """The apology for a turn that broke."""
    return catalogue(lang).text("turn.failed")


def searching(lang: str) -> str:
    """The status shown while the answer is looked for."""
    return catalogue(lang).text("turn.searching")


def question_cut(lang: str) -> str:
    """The notice under an answer to a question that was cut to the length cap."""
    return catalogue(lang).text("turn.question_cut")


def stopped_note(lang: str) -> str:
    """The notice under an answer the asker stopped."""
    return catalogue(lang).text("turn.stopped")


def interrupted_note(lang: str) -> str:
    """The notice under an answer cut off because the server is stopping."""
    return catalogue(lang).text("turn.interrupted")


def timed_out_note(lang: str) -> str:
    """The notice under an answer cut off at its deadline (the model was too slow)."""
    return catalogue(lang).text("turn.timed_out")


def resumed(lang: str) -> str:
    """The notice under an answer another process wrote again after the one writing it died."""
    return catalogue(lang).text("turn.resumed")


def nothing_to_stop(lang: str) -> str:
    """The reply to /stop when no answer is being written."""
    return catalogue(lang).text("turn.nothing_to_stop")


def stopping(lang: str) -> str:
    """The reply to /stop."""
    return catalogue(lang).text("turn.stopping")


def new_conversation(lang: str) -> str:
    """The reply to /new."""
    return catalogue(lang).text("turn.new_conversation")


def about_question(question: str, lang: str) -> str:
    """What /new, /stop or /sources says first when it acted on the person's latest conversation (they named none):
    which question that was, its first 80 characters on one line."""
    line = " ".join(question.split())
    short = line if len(line) <= _QUOTED else line[: _QUOTED - 1].rstrip() + "…"
    return catalogue(lang).text("turn.about_question", question=short)


def no_answer(lang: str) -> str:
    """The apology for finding nothing in the knowledge base."""
    return catalogue(lang).text("turn.no_answer")


def rate_limited(retry_after: float, lang: str) -> str:
    """The polite answer to someone sending faster than the rate limit allows."""
    return catalogue(lang).text("turn.rate_limited", seconds=max(1, round(retry_after)))


def queued(count: int, lang: str) -> str:
    """The conversation's queue notice: `count` questions wait for the answer being written."""
    return catalogue(lang).plural("queue.waiting", count)


def queue_done(lang: str) -> str:
    """The queue notice once the last waiting question has started."""
    return catalogue(lang).text("queue.done")


def busy_place(place: int, lang: str) -> str:
    """The notice of a question waiting for a free answer slot: its `place` in line."""
    return catalogue(lang).plural("busy.waiting", place)


def busy_done(lang: str) -> str:
    """That notice once the question's answer has started."""
    return catalogue(lang).text("busy.done")


def sources_heading(lang: str) -> str:
    """The heading of the sources under an answer."""
    return catalogue(lang).text("turn.sources")


def source_title(source: SourceLink, lang: str) -> str:
    """A source's title as shown, with the page its passage starts on when it has one ("handbook.pdf, p. 3")."""
    title = source.title or source.document_id or "untitled"
    return catalogue(lang).text("turn.source_page", title=title, page=source.page) if source.page else title


def format_source(source: SourceLink, lang: str = DEFAULT_LANGUAGE) -> str:
    """One source line in Markdown: `[n] title` linked when the source is a URL."""
    title = source_title(source, lang)
    label = f"[{title}]({source.url})" if web_url(source.url) else title
    return f"[{source.number}] {label}"


def format_sources(sources: Sequence[SourceLink], lang: str = DEFAULT_LANGUAGE) -> str:
    """The sources block under an answer, in Markdown; empty when there are none."""
    if not sources:
        return ""
    listed = f"**{sources_heading(lang)}**\n" + "\n".join(f"- {format_source(source, lang)}" for source in sources)
    # A query's result in monospace under the list (a code block is what every platform draws monospace).
    tables = [f"```\n[{source.number}]\n{monospace_table(source.table)}\n```" for source in sources if source.table]
    return "\n\n".join([listed, *tables])


def answer_with_sources(answer: Answer) -> str:
    """An answer's whole visible text: the answer, its notice, then its sources (headed in its language)."""
    parts = [answer.text.strip()]
    if answer.notice:
        parts.append(f"_{answer.notice}_")
    sources = format_sources(answer.sources, answer.language)
    if sources:
        parts.append(sources)
    return "\n\n".join(part for part in parts if part)


# Commands
def no_kb_bound(missing: Sequence[str], lang: str, *, admin: bool) -> str:
    """A chat that reads no knowledge base: the way out, for an admin (create, use) or for anyone else (ask one).

    `missing` names the knowledge bases the chat reads by default that do not exist: those are named.
    """
    who = "admin" if admin else "other"
    if missing:
        return catalogue(lang).plural(
            f"kb_way_out.missing_{who}", len(missing), name=missing[0], names=", ".join(missing), arg=_arg(missing[0])
        )
    return catalogue(lang).text(f"kb_way_out.none_{who}")


def kb_list_empty(missing: Sequence[str], lang: str, *, admin: bool) -> str:
    """/kb list when this chat may see no knowledge base: which default is missing, or how one is made."""
    if missing:
        return no_kb_bound(missing, lang, admin=admin)
    return catalogue(lang).text(f"kb_way_out.list_empty_{'admin' if admin else 'other'}")


def kb_use_missing(name: str, choices: Sequence[str], lang: str, *, create: bool) -> str:
    """`/kb use` of a name that does not exist: how to create it (`create`: an admin who may), else the `choices`."""
    words = catalogue(lang)
    if create:
        return words.text("kb_way_out.use_missing_admin", name=name, arg=_arg(name))
    if choices:
        return words.text("kb_way_out.use_missing_choose", name=name, choices=words.text("kb.separator").join(choices))
    return kb_missing(name, lang)


def _arg(name: str) -> str:
    # A name as a command argument: quoted when it has spaces, as commands read their arguments (shlex).
    return shlex.quote(name)


def no_sources(lang: str) -> str:
    """/sources when the last answer had none."""
    return catalogue(lang).text("sources.none")


def no_jobs(lang: str) -> str:
    """/jobs when there are none."""
    return catalogue(lang).text("jobs.none")


def nothing_to_ingest(lang: str, style: CommandStyle = SLASH_COMMANDS) -> str:
    """/ingest with neither files nor web addresses (where commands take no files: how files reach the bot)."""
    words, command = catalogue(lang), style.written("ingest")
    if style.attachments:
        return words.text("ingest.nothing", command=command)
    return "\n".join(filter(None, [words.text("files.urls_only", command=command), files_note(lang, style)]))


def no_faq_sheet(lang: str, style: CommandStyle = SLASH_COMMANDS) -> str:
    """/faq import without a sheet (where commands take no files: how files reach the bot)."""
    if style.attachments:
        return catalogue(lang).text("ingest.no_sheet", command=style.written("faq import"))
    return files_note(lang, style)


def files_note(lang: str, style: CommandStyle) -> str:
    """How files reach the bot on a platform whose commands take none (its `files_note`); "" elsewhere."""
    return catalogue(lang).text(style.files_note) if style.files_note else ""


def usage(text: str, lang: str) -> str:
    """How a command is written (`text`, its forms as bot.commands.registry writes them), after one that was not."""
    return catalogue(lang).text("command.usage", usage=text)


def form_usage(command: str, form: str, written: str, lang: str) -> str:
    """One form of a command as written in `lang` (`/kb use NAME`), `written` being the command as a platform
    writes it (`/kb`)."""
    return catalogue(lang).text(f"usage.{command}.{form}", command=written)


def command_help(name: str, lang: str) -> str:
    """The one-line help of the command `name` in `lang` (what /help and platform menus say of it)."""
    return catalogue(lang).text(f"help.{name}")


def unknown_command(name: str, lang: str, style: CommandStyle = SLASH_COMMANDS, *, suggestion: str = "") -> str:
    """The reply to a command that does not exist: the command it is likely a typo of (`suggestion`), else /help."""
    if suggestion:
        return catalogue(lang).text("suggest.unknown", command=style.written(name), suggestion=suggestion)
    return catalogue(lang).text("command.unknown", command=style.written(name), help=style.written("help"))


def files_admins_only(lang: str) -> str:
    """The refusal a non-admin gets for a file sent to the bot (no command typed): only admins add documents."""
    return catalogue(lang).text("files.admins_only")


def admins_only(command: str, lang: str, style: CommandStyle = SLASH_COMMANDS) -> str:
    """The refusal a non-admin gets for an admin command, or form of one ("kb use")."""
    return catalogue(lang).text("command.admins_only", command=style.written(command))


def help_text(commands: Sequence[tuple[str, str]], lang: str, *, intro: str = "", note: str = "") -> str:
    """The /help reply: what to ask (or `intro`), then each command (its usage, its one-line help) this person may
    use, then `note` (how files reach the bot where commands take none)."""
    words = catalogue(lang)
    lines = [intro or words.text("command.help_intro"), ""]
    lines += [words.text("command.help_line", usage=usage_, help=help_) for usage_, help_ in commands]
    return "\n".join([*lines, *(["", note] if note else [])])


def greeting(kb_names: Sequence[str], lang: str, style: CommandStyle = SLASH_COMMANDS) -> str:
    """The first thing a person hears (`/start`): what the bot does, from which knowledge bases."""
    words = catalogue(lang)
    if not kb_names:
        return words.text("start.greeting_no_kb", command=form_usage("kb", "use", style.written("kb"), lang))
    named = words.text("start.separator").join(f"**{name}**" for name in kb_names)
    return words.text("start.greeting", kbs=named)


def mode_set(mode: str, lang: str) -> str:
    """Confirms the chat's answer mode."""
    return catalogue(lang).text("mode.all" if mode == "all" else "mode.mention")


def web_search_set(on: bool, lang: str) -> str:
    """Confirms `/web on` or `/web off`."""
    return catalogue(lang).text("web.on" if on else "web.off")


def web_search_unavailable(lang: str) -> str:
    """The reply to `/web on` where no web search provider is configured."""
    return catalogue(lang).text("web.unavailable")


def fallback_set(text: str, lang: str) -> str:
    """Confirms /fallback."""
    return catalogue(lang).text("fallback.set", text=text) if text else catalogue(lang).text("fallback.default")


def language_set(lang: str) -> str:
    """Confirms /lang, in the language now chosen ("" for auto: in the language of each message, said in English)."""
    if not lang:
        return catalogue(DEFAULT_LANGUAGE).text("lang.auto")
    words = catalogue(lang)
    return words.text("lang.set", name=words.name)


def kb_list(entries: list[tuple[str, str, bool]], lang: str) -> str:
    """The /kb list reply: each knowledge base, the ones this chat reads marked."""
    words = catalogue(lang)
    if not entries:
        return words.text("kb.list_empty")
    lines = [
        words.text(
            "kb.list_line",
            name=name,
            in_use=words.text("kb.in_use") if used else "",
            description=words.text("kb.description", description=description) if description else "",
        )
        for name, description, used in entries
    ]
    return words.text("kb.list_heading") + "\n" + "\n".join(lines)


def kb_missing(name: str, lang: str, style: CommandStyle = SLASH_COMMANDS) -> str:
    """`/kb use` or `/kb info` of a name that does not exist."""
    return catalogue(lang).text("kb.missing", name=name, command=style.written("kb list"))


def kb_not_allowed(name: str, lang: str, style: CommandStyle = SLASH_COMMANDS) -> str:
    """`/kb use` of a knowledge base this chat may not read."""
    return catalogue(lang).text("kb.not_allowed", name=name, command=style.written("kb list"))


def kb_only_shared(name: str, lang: str, style: CommandStyle = SLASH_COMMANDS) -> str:
    """An admin command that would change a knowledge base the chat was only granted to read."""
    return catalogue(lang).text("kb.only_shared", name=name, command=style.written("kb create NAME"))


def kb_now_using(name: str, lang: str) -> str:
    """Confirms `/kb use`."""
    return catalogue(lang).text("kb.now_using", name=name)


def kb_info(name: str, description: str, counts: dict[str, int], lang: str) -> str:
    """The /kb info reply: what the knowledge base holds, as people count it (its documents and FAQs)."""
    words = catalogue(lang)
    figures = words.text("kb.separator").join(
        words.plural(f"kb.count.{what}", counts.get(what, 0)) for what in ("documents", "faqs")
    )
    described = words.text("kb.description", description=description) if description else ""
    return words.text("kb.info", name=name, description=described, figures=figures)


def kb_created(name: str, lang: str, *, reading: bool) -> str:
    """Confirms `/kb create`, with the next step: add documents (the chat reads it already) or `/kb use` it."""
    return catalogue(lang).text("kb_create.created_reading" if reading else "kb_create.created", name=name)


def kb_exists(name: str, lang: str) -> str:
    """`/kb create` of a name taken already."""
    return catalogue(lang).text("kb_create.exists", name=name)


def kb_bad_name(max_length: int, lang: str) -> str:
    """`/kb create` of a name that is empty, too long or more than one line."""
    return catalogue(lang).text("kb_create.bad_name", max=max_length)


def kb_create_not_allowed(name: str, allowed: Sequence[str], lang: str) -> str:
    """`/kb create` of a knowledge base this chat could not read (the web chat reads only those it is allowed)."""
    words = catalogue(lang)
    if not allowed:
        return words.text("kb_create.none_allowed", name=name)
    return words.text("kb_create.not_allowed", name=name, allowed=words.text("kb.separator").join(allowed))


def source_detail(number: int, title: str, uri: str, text: str) -> str:
    """One source of /sources: its number and title (a link for web pages) and its snippet (bot.chat.sources')."""
    label = f"[{title}]({uri})" if web_url(uri) else title
    return f"[{number}] **{label}**\n> {text}" if text else f"[{number}] **{label}**"


def _job_name(job: JobRecord) -> str:
    # A file is known by its name: uploads are stored under a random folder, and a file ingested from the command
    # line by the server's path, which means nothing in a chat. A web page by its address.
    return job.source if job.kind in ("url", "sync") else PurePath(job.source).name or job.source


def _stage(job: JobRecord, lang: str) -> str:
    return catalogue(lang).get(f"job.stage.{job.stage}") or job.stage


# The longest failure reason /jobs shows on a job's line.
_REASON_CHARS: Final = 160
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s|(?<=[。！？；])|;\s")
# Jobs failed for the same reason are listed by name up to this many, then counted.
_NAMES_SHOWN: Final = 3


def short_reason(reason: str) -> str:
    """A failure reason in one short line: its first sentence, cut on a word near `_REASON_CHARS`."""
    line = " ".join(reason.strip().splitlines()[0].split()) if reason.strip() else ""
    line = _SENTENCE_END.split(line, maxsplit=1)[0].rstrip(" ;；")
    if len(line) <= _REASON_CHARS:
        return line
    cut = line[: _REASON_CHARS - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut[_REASON_CHARS // 2 :] else cut).rstrip(" ,;:(") + "…"


def jobs_list(jobs: Sequence[JobRecord], kb_names: Mapping[str, str], now: datetime, lang: str) -> str:
    """The /jobs reply, newest first: each job's file, knowledge base, when and state; one line for the jobs of a
    knowledge base that failed for the same reason, which is said once."""
    groups: list[list[JobRecord]] = []
    failed: dict[tuple[str, str], list[JobRecord]] = {}
    for job in jobs:
        if job.status == "failed":
            key = (job.kb_id, short_reason(failure(job, lang)))
            if key in failed:
                failed[key].append(job)
                continue
            failed[key] = [job]
            groups.append(failed[key])
        else:
            groups.append([job])
    return "\n".join(_jobs_line(group, kb_names.get(group[0].kb_id, "?"), now, lang) for group in groups)


def _jobs_line(group: Sequence[JobRecord], kb_name: str, now: datetime, lang: str) -> str:
    words = catalogue(lang)
    job = group[0]
    names = [f"`{_job_name(member)}`" for member in group]
    shown = words.text("jobs.names.separator").join(names[:_NAMES_SHOWN])
    if len(names) > _NAMES_SHOWN:
        shown = words.text("jobs.names.more", names=shown, count=len(names) - _NAMES_SHOWN)
    return words.text("jobs.line", source=shown, kb=kb_name, when=_ago(job, now, lang), state=_job_state(job, lang))


def _job_state(job: JobRecord, lang: str) -> str:
    words = catalogue(lang)
    if job.status == "running":
        if job.total:
            return words.text("job.progress", stage=_stage(job, lang), done=min(job.done, job.total), total=job.total)
        return _stage(job, lang) or words.text("job.running")
    if job.status == "queued":
        return words.text("job.queued")
    if job.status == "failed":
        return words.text("job.failed_because", error=short_reason(failure(job, lang)))
    return job_result(job, lang)


def _ago(job: JobRecord, now: datetime, lang: str) -> str:
    """When the job last moved (ended, started or was queued), relative to `now`: "5 min ago"."""
    words = catalogue(lang)
    moved = job.finished_at or job.started_at or job.created_at
    seconds = (now - (moved if moved.tzinfo else moved.replace(tzinfo=UTC))).total_seconds()
    if seconds < 60:
        return words.text("jobs.when.now")
    if seconds < 3600:
        return words.text("jobs.when.minutes", count=int(seconds // 60))
    if seconds < 86400:
        return words.text("jobs.when.hours", count=int(seconds // 3600))
    return words.plural("jobs.when.days", int(seconds // 86400))


def faq_added(kb_name: str, lang: str, *, created: bool) -> str:
    """Confirms `/faq add`."""
    return catalogue(lang).text("faq.added" if created else "faq.updated", kb=kb_name)


def faq_list(kb_name: str, faqs: list[tuple[str, str]], limit: int, lang: str) -> str:
    """The /faq list reply: short ids (for /faq delete) and questions."""
    words = catalogue(lang)
    if not faqs:
        return words.text("faq.list_empty", kb=kb_name)
    lines = [f"- `{faq_id[:8]}` {question}" for faq_id, question in faqs[:limit]]
    more = "\n" + words.text("faq.more", count=len(faqs) - limit) if len(faqs) > limit else ""
    return words.text("faq.list_heading", kb=kb_name, count=len(faqs)) + "\n" + "\n".join(lines) + more


def faq_missing(faq_id: str, lang: str, style: CommandStyle = SLASH_COMMANDS) -> str:
    """`/faq delete` of an id this chat's knowledge bases do not hold."""
    return catalogue(lang).text("faq.missing", id=faq_id, command=style.written("faq list"))


def faq_ambiguous(faq_id: str, lang: str) -> str:
    """`/faq delete` of a short id that fits more than one FAQ."""
    return catalogue(lang).text("faq.ambiguous", id=faq_id)


def faq_id_too_short(minimum: int, lang: str, style: CommandStyle = SLASH_COMMANDS) -> str:
    """`/faq delete` of an id too short to name one FAQ (an empty one would match every id)."""
    return catalogue(lang).text("faq.id_too_short", min=minimum, command=style.written("faq list"))


def faq_deleted(question: str, lang: str) -> str:
    """Confirms `/faq delete`."""
    return catalogue(lang).text("faq.deleted", question=question)


def not_urls(args: list[str], lang: str) -> str:
    """`/ingest` with arguments that are not web addresses."""
    return catalogue(lang).text("ingest.not_urls", args=", ".join(args[:3]))


def file_too_large(name: str, size: int | None, limit: int, lang: str = DEFAULT_LANGUAGE) -> str:
    """An upload over the size limit (`size` None when it was not read to its end), in MB, and who can raise it.

    The setting that holds the limit is named in the log only: a chat user cannot change it.
    """
    words = catalogue(lang)
    if size is None:
        return words.text("size_limit.over", name=name, limit=megabytes(limit))
    return words.text("ingest.file_too_large", name=name, size=megabytes(size), limit=megabytes(limit))


def megabytes(size: int) -> str:
    """A byte count in MB as the size settings count them (1 MB = 1,000,000 bytes): '50 MB', '0.05 MB'."""
    return f"{round(size / 1_000_000, 2):g} MB"


def file_unreadable(name: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """An attachment the platform gave no way to download."""
    return catalogue(lang).text("ingest.file_unreadable", name=name)


def ingest_queued(count: int, kb_name: str, lang: str) -> str:
    """The first text of an ingestion's status message."""
    return catalogue(lang).plural("ingest.queued", count, kb=kb_name)


def ingest_progress(jobs: list[JobRecord], lang: str) -> str:
    """The status message while jobs run: one line per job with its stage and progress."""
    words = catalogue(lang)
    lines = [words.text("ingest.line", name=_progress_name(job, lang), state=_job_progress(job, lang)) for job in jobs]
    return words.text("ingest.progress") + "\n" + "\n".join(lines)


def _progress_name(job: JobRecord, lang: str) -> str:
    # While it runs, a file recognised as an FAQ sheet says so (its outcome says it again: "FAQ sheet imported").
    return catalogue(lang).text("ingest.sheet.name", name=_job_name(job)) if job.kind == "faq" else _job_name(job)


def _job_progress(job: JobRecord, lang: str) -> str:
    words = catalogue(lang)
    if job.status == "queued":
        return words.text("job.waiting")
    if job.status == "running":
        counts = f" {min(job.done, job.total)}/{job.total}" if job.total else ""
        return f"{_stage(job, lang) or words.text('job.starting')}{counts}"
    return words.get(f"job.{job.status}") or job.status


def job_result(job: JobRecord, lang: str) -> str:
    """What a finished job did, as the chat that asked for it reads it: indexed, already indexed, FAQs, or why not."""
    words = catalogue(lang)
    if job.status == "failed":
        failed = "job.result.faq_failed" if job.kind == "faq" else "job.result.failed"
        return words.text(failed, reason=failure(job, lang))
    result = job.result
    if job.kind == "faq":
        return words.text(
            "job.result.faq",
            created=result.get("created", 0),
            updated=result.get("updated", 0),
            unchanged=result.get("unchanged", 0),
        )
    if result.get("unchanged"):
        return words.text("job.result.unchanged")
    indexed = words.plural("job.result.indexed", int(result.get("chunks", 0)))
    return words.text("job.result.sentence_gap").join([indexed, *_ocr_note(result, lang)])


def _ocr_note(result: Mapping[str, Any], lang: str) -> list[str]:
    """How many pages OCR read, and how many it left unread past its limits: nothing for a file with a text layer."""
    words = catalogue(lang)
    read, unread = int(result.get("ocr_pages") or 0), int(result.get("ocr_unread_pages") or 0)
    note = [words.plural("job.result.ocr", read)] if read else []
    return note + ([words.plural("job.result.ocr_unread", unread)] if unread else [])


# Details that are byte counts: said in MB, as the size settings count them.
_SIZES: Final = frozenset({"size", "max_size"})


def failure(job: JobRecord, lang: str) -> str:
    """Why a job failed, in `lang`: worded from the reason id and details rag gave (kept in the job's result), else
    the job's English line (a job failed by an older ragbot, or by a failure without an id)."""
    words = catalogue(lang)
    stored = job.result.get("failure")
    if isinstance(stored, Mapping):
        try:
            if stored.get("reason") == "faq_sheet":
                return _faq_problems(stored, lang)
            details = {
                name: megabytes(value) if name in _SIZES and isinstance(value, int) else value
                for name, value in dict(stored.get("details") or {}).items()
            }
            worded = words.get(f"failure.{stored.get('reason')}", **details)
        except (KeyError, IndexError, TypeError, ValueError):
            worded = None  # details another version stored under other names: the English line still says it
        if worded:
            return worded
    return job.error


def _faq_problems(stored: Mapping[str, Any], lang: str) -> str:
    """An FAQ sheet's problems, each on its row ("row 3: there is no answer…"), and how many more there are."""
    words = catalogue(lang)
    shown = []
    for row, reason, details in stored["problems"]:
        problem = words.text(f"failure.faq.{reason}", **details)
        shown.append(words.text("failure.faq.row", row=row, problem=problem) if row else problem)
    more = int(stored.get("more") or 0)
    listed = words.text("failure.faq.separator").join(shown)
    return words.text("failure.faq.more", problems=listed, count=more) if more else listed


def ingest_outcome(results: list[JobRecord], lang: str) -> str:
    """The final text of an ingestion's status message: what happened to each source, counted first when several."""
    words = catalogue(lang)
    if len(results) == 1:
        return words.text("ingest.outcome.one", name=_job_name(results[0]), state=job_result(results[0], lang))
    outcomes = [job_outcome(job) for job in results]
    summary = words.text("kb.separator").join(
        words.plural(f"ingest.outcome.{outcome}", outcomes.count(outcome))
        for outcome in ("indexed", "unchanged", "faq", "failed")
        if outcome in outcomes
    )
    lines = [words.text("ingest.line", name=_job_name(job), state=job_result(job, lang)) for job in results]
    return words.text("ingest.outcome.done", summary=summary) + "\n" + "\n".join(lines)


def job_outcome(job: JobRecord) -> str:
    """What a finished job came to: "failed", "faq" (a sheet imported), "unchanged" or "indexed"."""
    if job.status == "failed":
        return "failed"
    if job.kind == "faq":
        return "faq"
    return "unchanged" if job.result.get("unchanged") else "indexed"


# Web chat
WEB_NEEDS_ACCESS: Final = "This ragbot is private: open the access link your admin gave you."
WEB_SESSION_EXPIRED: Final = "Your session is no longer valid. Reload the page to start a new one."
WEB_BAD_BODY: Final = 'The request body must be JSON like {"text": "your question"}.'
WEB_BAD_MESSAGE_ID: Final = 'A question\'s "id" must be 1 to 64 letters, digits, "-" or "_".'
WEB_ADMIN_ONLY: Final = "Only admins can upload files. Enter the admin token first."
WEB_UPLOAD_FORM: Final = "Send the files as a multipart form with one or more `file` fields."
WEB_FILES_WITH_A_COMMAND: Final = "Files go with /ingest or /faq import: type one of them, or nothing, and send again."
WEB_MEDIA_FORM: Final = "Send a question with media as a multipart form: one `file`, and `text`, `id`, `seconds`."
WEB_BAD_FEEDBACK: Final = 'Feedback must be JSON like {"message_id": "…", "value": "up"} (or "down").'
WEB_NO_SUCH_ANSWER: Final = "There is no such answer in this conversation."
WEB_BAD_REASON: Final = 'A reason must be JSON like {"message_id": "…", "reason": "outdated", "note": "…"}.'
WEB_NO_ADMIN: Final = "No admin token is configured for this ragbot (WEB_ADMIN_TOKEN)."
WEB_WRONG_TOKEN: Final = "That admin token is not right."
WEB_NOT_JSON: Final = "Send this request as JSON (Content-Type: application/json), as the chat page does."
WEB_NOT_FROM_THE_PAGE: Final = "Refused: this request did not come from the chat page. Reload the page and try again."
SERVED_LOCALLY: Final = "This ragbot serves only the machine it runs on. Its admin can make it public (RAGBOT_PUBLIC)."


def web_admin_locked(retry_after: float) -> str:
    """The admin box after too many wrong tokens: when it may be tried again."""
    return f"Too many wrong admin tokens. Try again in {max(1, round(retry_after / 60))} minutes."


def web_too_many_files(limit: int) -> str:
    """An upload of more files than one request may carry."""
    return f"Too many files in one upload: send at most {limit} at a time."


def request_too_large(limit: int) -> str:
    """A request body over its route's limit."""
    return f"The request is too large (over {megabytes(limit)})."


def web_text_too_long(limit: int) -> str:
    """A message over the web chat's size cap."""
    return f"That message is too long (over {limit // 1024} KB). Please shorten it."


# Terminal
CLI_PROMPT: Final = "you> "
CLI_NEW_CONVERSATION: Final = "(new conversation)"
CLI_SOURCES_HEADING: Final = "Sources:"


def cli_banner(kb_names: list[str]) -> str:
    """The first line of an interactive `ragbot chat`."""
    return (
        f"Chatting with {', '.join(kb_names)}. Ask a question; /new starts a new conversation, /quit (or Ctrl-D) ends."
    )


# Feedback buttons under answers (Telegram, Slack)
def feedback_thanks(verdict: str, lang: str) -> str:
    """What an answer shows, in place of its buttons, once someone rated it (`up` or `down`)."""
    return catalogue(lang).text(f"feedback.{'up' if verdict == 'up' else 'down'}")


def feedback_gone(lang: str) -> str:
    """A button pressed under an answer that is no longer part of its conversation."""
    return catalogue(lang).text("feedback.gone")


def feedback_ask_why(lang: str) -> str:
    """The button under a 👎 answer that asks for a reason (nobody has to press it)."""
    return catalogue(lang).text("feedback.why")


def feedback_why_form(lang: str) -> dict[str, str]:
    """The words of the form asking why (Slack's modal): title, question, note label, send and cancel."""
    words = catalogue(lang)
    return {part: words.text(f"feedback.why_{part}") for part in ("title", "question", "note", "send", "cancel")}


def feedback_reason(reason: str, lang: str) -> str:
    """One reason for a 👎 as a person picks it (`wrong`, `outdated`, `not_found`, `too_long`, `other`)."""
    return catalogue(lang).text(f"feedback.reason_{reason}")


def feedback_noted(reason: str, lang: str) -> str:
    """What a 👎 answer shows once its reason was given."""
    return catalogue(lang).text("feedback.noted", reason=feedback_reason(reason, lang))


def feedback_reason_refused(result: str, lang: str, limit: int = 0) -> str:
    """Why a reason was not stored: `not_down`, `not_rater`, `too_long` (over `limit`), `unknown` or `gone`."""
    if result == "too_long":
        return catalogue(lang).text("feedback.note_too_long", limit=limit)
    if result == "gone":
        return feedback_gone(lang)
    key = {"not_down": "not_down", "not_rater": "not_rater"}.get(result, "unknown_reason")
    return catalogue(lang).text(f"feedback.{key}")


def stats_bad_days(limit: int, lang: str, style: CommandStyle = SLASH_COMMANDS) -> str:
    """`/stats` with something other than a number of days."""
    return catalogue(lang).text("stats.bad_days", limit=limit, command=style.written("stats"))


def stats_unavailable(lang: str) -> str:
    """`/stats` where this ragbot has nothing to group questions with."""
    return catalogue(lang).text("stats.unavailable")


def stats_report(
    days: int,
    figures: tuple[int, int, int],
    groups: Sequence[tuple[str, int, Sequence[tuple[int, str, str]]]],
    lang: str,
) -> str:
    """`/stats`: the chat's questions and ratings over `days` days (`figures`: questions, 👍, 👎), then each kind
    of miss (`unanswered`, `disliked`) with its total and groups (count, example, reasons as the person reads them)."""
    words = catalogue(lang)
    questions, helpful, unhelpful = figures
    heading = "stats.heading_one" if days == 1 else "stats.heading"
    lines = [words.text(heading, days=days, questions=questions, helpful=helpful, unhelpful=unhelpful)]
    for kind, total, rows in groups:
        if not total:
            continue
        lines += ["", words.text(f"stats.{kind}", total=total)]
        for count, example, why in rows:
            line = "- " + words.text("stats.group", count=count, example=example)
            lines.append(f"{line} ({why})" if why else line)
        if (rest := total - sum(count for count, _, _ in rows)) > 0:
            lines.append(words.text("stats.more", count=rest))
    if not any(total for _, total, _ in groups):
        lines += ["", words.text("stats.nothing")]
    return "\n".join(lines)


# Knowledge bases at start-up
def knowledge_bases_missing(names: Sequence[str], settings: Sequence[str]) -> str:
    """Told when `ragbot serve` starts: knowledge bases the settings name that do not exist, and how to make them."""
    several = len(names) > 1
    commands = " and ".join(f"`ragbot kb create {shlex.quote(name)}`" for name in names)
    return (
        f"{', '.join(settings)} {'name' if len(settings) > 1 else 'names'} "
        f"{'knowledge bases that do' if several else 'a knowledge base that does'} not exist yet "
        f"({', '.join(names)}), so chats that read {'them' if several else 'it'} find nothing: create "
        f"{'them' if several else 'it'} with {commands}, or as an admin send "
        f"/kb create {shlex.quote(names[0]) if not several else 'NAME'} in a chat"
    )


# The search index
def index_outdated(missing: Mapping[Any, Sequence[str]], stale_terms: Mapping[Any, int] | None = None) -> str:
    """Told once (CLI line, serve log) when the index predates this version; answers still work meanwhile."""
    costs = [
        *(["read SQL on every search"] if missing else []),
        *(["keyword search misses other forms of a word"] if stale_terms else []),
    ]
    return (
        f"the search index was built by an older ragbot ({_outdated(missing, stale_terms)}): answers still work, but "
        f"{' and '.join(costs)} until `ragbot reindex --kb NAME` rebuilds it"
    )


def index_rebuild_all(missing: Mapping[Any, Sequence[str]], stale_terms: Mapping[Any, int] | None = None) -> str:
    """Said when a reindex finds an index of an older version, which it rebuilds whole."""
    outdated = _outdated(missing, stale_terms)
    return f"the index was built by an older ragbot ({outdated}): rebuilding every knowledge base"


def _outdated(missing: Mapping[Any, Sequence[str]], stale_terms: Mapping[Any, int] | None) -> str:
    """What makes the index outdated: the missing properties by name, once each; keyword terms of an older analyzer."""
    lacking = sorted({name for names in missing.values() for name in names})
    return "; ".join(
        [
            *([f"it lacks {', '.join(lacking)}"] if lacking else []),
            *(["its keyword terms were cut by an older text analyzer"] if stale_terms else []),
        ]
    )


def vectors_foreign(held: str, configured: str) -> str:
    """Why a command that embeds or searches stops: the index holds another embedding model's vectors."""
    return (
        f"the search index holds vectors of {held}, but the embedding model is now {configured}: vectors of two "
        f"models cannot be compared. Run `ragbot reindex --kb NAME` to re-embed every knowledge base with {configured}"
        f" (or set the embedding model back to {held})"
    )


def reembedding_all(held: str, configured: str) -> str:
    """Said when a reindex replaces one embedding model's vectors with another's."""
    return f"the index holds vectors of {held}: re-embedding every knowledge base with {configured}"


def reindex_busy(jobs: int) -> str:
    """Why a reindex does not start: ingestion jobs would write into the index being replaced."""
    return (
        f"{_count(jobs, 'ingestion job')} {'is' if jobs == 1 else 'are'} queued or running: reindex once "
        "`ragbot jobs --status queued --status running` lists none"
    )


def reindex_running(owner: str) -> str:
    """Why a second reindex does not start."""
    return f"another reindex is running ({owner}): wait for it to finish, then run this again"


def reindex_lease_lost() -> str:
    """Why a reindex stopped before its switch: its hold on the index lapsed (the database was out of reach)."""
    return (
        "the reindex lost its hold on the index (the database was out of reach too long, or another process "
        "took it over): it stopped before switching, the old index keeps answering; run it again"
    )


def index_rebuilding(lang: str = DEFAULT_LANGUAGE) -> str:
    """Said to a chat that tries to change the index while `ragbot reindex` rebuilds it."""
    return catalogue(lang).text("command.index_rebuilding")


def reindexed(names: Sequence[str], chunks: int, faq_questions: int) -> str:
    """The end of `ragbot reindex`."""
    counted = f"{_count(chunks, 'chunk')}, {_count(faq_questions, 'FAQ question')}"
    return f"reindexed {', '.join(names)} ({counted}): searches now read the new index"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def bad_every(text: str, lang: str) -> str:
    """A schedule period that does not parse, and the format."""
    return catalogue(lang).text("schedule.bad_every", text=text[:40])


def every_out_of_bounds(text: str, minimum: int, maximum: int, lang: str) -> str:
    """A schedule period shorter or longer than allowed."""
    return catalogue(lang).text(
        "schedule.out_of_bounds", text=text, minimum=shown_period(minimum), maximum=shown_period(maximum)
    )


def shown_period(seconds: int) -> str:
    """A schedule period in its largest whole unit, as /ingest --every reads it: `1d`, `6h`."""
    for unit, size in (("w", 604_800), ("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def url_scheduled(every: int, lang: str) -> str:
    """After `/ingest URL --every`: how often the pages are fetched again."""
    return catalogue(lang).text("schedule.scheduled", every=shown_period(every))


def sync_gone(source: str, status: int, lang: str) -> str:
    """A scheduled page answered 404 or 410: kept, and the admins told."""
    return catalogue(lang).text("schedule.gone", source=source, status=status)


def sync_failing(source: str, count: int, reason: str, lang: str) -> str:
    """A scheduled page failed several syncs in a row."""
    return catalogue(lang).text("schedule.failing", source=source, count=count, reason=reason.removeprefix("failed: "))


def schedules_list(schedules: Sequence[ScheduleRecord], kb_names: Mapping[str, str], lang: str) -> str:
    """What /jobs shows above the jobs: each scheduled page, its period and how its last run went."""
    words = catalogue(lang)
    lines = [words.text("schedule.title")]
    for schedule in schedules:
        lines.append(
            words.text(
                "schedule.line",
                source=f"`{schedule.source}`",
                kb=kb_names.get(schedule.kb_id, "?"),
                every=shown_period(schedule.every_seconds),
                last=_last_run(schedule, lang),
            )
        )
    return "\n".join(lines)


def _last_run(schedule: ScheduleRecord, lang: str) -> str:
    """How a scheduled page's last fetch went, in the chat's words (the stored outcome is the operators' English)."""
    words = catalogue(lang)
    outcome = schedule.last_outcome
    if not outcome:
        return words.text("schedule.never")
    if schedule.failures:
        return words.plural("schedule.last.failed", schedule.failures)
    if outcome.startswith("updated"):
        return words.text("schedule.last.updated")
    return words.text("schedule.last.unchanged")


def sync_queued(count: int, lang: str) -> str:
    """`/sync`: the pages being fetched again."""
    return catalogue(lang).plural("schedule.sync_queued", count)


def sync_nothing(lang: str) -> str:
    """`/sync` where no page is scheduled."""
    return catalogue(lang).text("schedule.sync_nothing")


def sync_default_set(kb_name: str, every: int, count: int, lang: str) -> str:
    """`/sync every 1d`: the knowledge base's period for its pages."""
    return catalogue(lang).text("schedule.default_set", kb=kb_name, every=shown_period(every), count=count)


def tables_set(kb_name: str, lang: str, *, on: bool) -> str:
    """`/tables on|off`."""
    return catalogue(lang).text(f"tables.{'on' if on else 'off'}", kb=kb_name)


def sync_default_off(kb_name: str, lang: str) -> str:
    """`/sync every off`."""
    return catalogue(lang).text("schedule.default_off", kb=kb_name)


def graph_building(kb_name: str, lang: str) -> str:
    """`/graph on`, while the documents already held are read into the graph."""
    return catalogue(lang).text("graph.building", kb=kb_name)


def graph_on(kb_name: str, documents: int, mentions: int, lang: str) -> str:
    """`/graph on`, done: how many documents were read and entity mentions found."""
    return catalogue(lang).text("graph.on", kb=kb_name, documents=documents, mentions=mentions)


def graph_off(kb_name: str, lang: str) -> str:
    """`/graph off`."""
    return catalogue(lang).text("graph.off", kb=kb_name)


def graph_unavailable(lang: str) -> str:
    """`/graph` where this ragbot has no graph store."""
    return catalogue(lang).text("graph.unavailable")


def every_urls_only(lang: str) -> str:
    """`--every` given with files only: files are ingested once, web addresses can be fetched again."""
    return catalogue(lang).text("schedule.urls_only")


def every_credentials(lang: str) -> str:
    """`--every` for an address that carries credentials, which are never stored to fetch it again with."""
    return catalogue(lang).text("schedule.credentials")


# Media sent as a question (bot.chat.media)
_SHOWN_CHARS: Final = 300


def _shortened(text: str) -> str:
    """What was understood, on one line and cut to a readable length for showing back."""
    line = " ".join(text.split())
    return line if len(line) <= _SHOWN_CHARS else f"{line[: _SHOWN_CHARS - 1]}…"


def media_heard(text: str, lang: str) -> str:
    """A voice message's transcript, shown back before its answer."""
    return catalogue(lang).text("media.heard", text=_shortened(text))


def media_read(text: str, lang: str) -> str:
    """The text read from an image (OCR), shown back before its answer."""
    return catalogue(lang).text("media.read", text=_shortened(text))


def media_seen(text: str, lang: str) -> str:
    """A vision model's description of an image, shown back before its answer."""
    return catalogue(lang).text("media.seen", text=_shortened(text))


def no_transcription(lang: str) -> str:
    """A voice message where no speech-to-text model is configured (names the setting)."""
    return catalogue(lang).text("media.no_transcription")


def no_image_reader(lang: str) -> str:
    """An image where neither OCR nor a vision model is available (names the setting)."""
    return catalogue(lang).text("media.no_image_reader")


def heard_nothing(lang: str) -> str:
    """An empty or silent voice message."""
    return catalogue(lang).text("media.heard_nothing")


def no_text_in_image(lang: str) -> str:
    """An image in which OCR found no text."""
    return catalogue(lang).text("media.no_text")


def audio_too_long(seconds: float, limit: float, lang: str) -> str:
    """A voice message longer than the bot listens to, refused before it is downloaded."""
    return catalogue(lang).text("media.too_long", seconds=clock_time(seconds), limit=clock_time(limit))


def media_too_large(name: str, size: int | None, limit: int, lang: str) -> str:
    """An image or audio file over the size read for a question (`size` None when it was not read to its end)."""
    if size is None:
        return catalogue(lang).text("media.too_large_unread", name=name, limit=megabytes(limit))
    return catalogue(lang).text("media.too_large", name=name, size=megabytes(size), limit=megabytes(limit))


def not_an_image(name: str, lang: str) -> str:
    """A file sent as an image whose bytes are no image."""
    return catalogue(lang).text("media.not_image", name=name)


def media_unreadable(name: str, lang: str, reason: str = "", details: Mapping[str, Any] | None = None) -> str:
    """An image or audio the reader failed on: worded from rag's reason id where the catalogue has it."""
    words = catalogue(lang)
    if reason:
        shown = {
            key: megabytes(value) if key in _SIZES and isinstance(value, int) else value
            for key, value in (details or {}).items()
        }
        try:
            worded = words.get(f"failure.{reason}", **shown)
        except (KeyError, IndexError):
            worded = None
        if worded:
            return worded
    return words.text("media.unreadable", name=name)


def media_too_slow(lang: str) -> str:
    """Reading a question's media went past its time limit."""
    return catalogue(lang).text("media.too_slow")


def media_too_many(limit: int, lang: str) -> str:
    """More images or voice messages with one question than are read."""
    return catalogue(lang).text("media.too_many", limit=limit)


def clock_time(seconds: float) -> str:
    """A length of time as a clock shows it: `0:42`, `5:00`, `1:02:03`."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
