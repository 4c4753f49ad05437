"""Every fixed thing the bot says to a person, in the language of the turn, and how sources are written under it.

The texts of chat replies live in the catalogues (bot/locales/<code>.toml, read through bot.i18n); each function
here takes the turn's language code (`lang`) and fills one in. What only an operator reads (CLI output, logs,
HTTP errors of the web API) stays English and is written here directly.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Final

from bot.types import SLASH_COMMANDS, Answer, CommandStyle, SourceLink, web_url
from bot.words.catalogue import DEFAULT_LANGUAGE, catalogue, placeholders
from storage.records import JobRecord

# English texts for callers that reply before any turn has a language (adapters, command parsing).
TURN_FAILED: Final = catalogue(DEFAULT_LANGUAGE).text("turn.failed")
UNCLOSED_QUOTE: Final = catalogue(DEFAULT_LANGUAGE).text("command.unclosed_quote")


def translated(text: str, lang: str) -> str:
    """`text` in `lang` when it is one of the English catalogue's fixed texts (said by a lower layer), else as is.

    Lower layers know no languages: rag's input check refuses in English, command parsing flags an unclosed quote
    in English. The turn boundary hands their texts through here, so they reach the person in the turn's language.
    """
    message_id = _fixed_ids().get(text)
    return catalogue(lang).text(message_id) if message_id else text


# The sections whose whole sentences lower layers say; short words ("done", "Sources") are never looked up.
_SAID_BELOW: Final = ("turn.", "refusal.", "command.")


@functools.cache
def _fixed_ids() -> dict[str, str]:
    english = catalogue(DEFAULT_LANGUAGE).entries
    return {
        template: message_id
        for message_id, template in english.items()
        if message_id.startswith(_SAID_BELOW) and not placeholders(template)
    }


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


def nothing_to_stop(lang: str) -> str:
    """The reply to /stop when no answer is being written."""
    return catalogue(lang).text("turn.nothing_to_stop")


def stopping(lang: str) -> str:
    """The reply to /stop."""
    return catalogue(lang).text("turn.stopping")


def new_conversation(lang: str) -> str:
    """The reply to /new."""
    return catalogue(lang).text("turn.new_conversation")


def no_answer(lang: str) -> str:
    """The apology for finding nothing in the knowledge base."""
    return catalogue(lang).text("turn.no_answer")


def rate_limited(retry_after: float, lang: str) -> str:
    """The polite answer to someone sending faster than the rate limit allows."""
    return catalogue(lang).text("turn.rate_limited", seconds=max(1, round(retry_after)))


def queued(place: int, lang: str) -> str:
    """Told to someone whose question waits for the answers before it in the same conversation."""
    if place <= 1:
        return catalogue(lang).text("turn.queued_next")
    return catalogue(lang).text("turn.queued", place=place)


def sources_heading(lang: str) -> str:
    """The heading of the sources under an answer."""
    return catalogue(lang).text("turn.sources")


def format_source(source: SourceLink) -> str:
    """One source line in Markdown: `[n] title` linked when the source is a URL."""
    title = source.title or source.document_id or "untitled"
    label = f"[{title}]({source.url})" if web_url(source.url) else title
    return f"[{source.number}] {label}"


def format_sources(sources: Sequence[SourceLink], lang: str = DEFAULT_LANGUAGE) -> str:
    """The sources block under an answer, in Markdown; empty when there are none."""
    if not sources:
        return ""
    return f"**{sources_heading(lang)}**\n" + "\n".join(f"- {format_source(source)}" for source in sources)


def answer_with_sources(answer: Answer) -> str:
    """An answer's whole visible text: the answer, its notice, then its sources (headed in its language)."""
    parts = [answer.text.strip()]
    if answer.notice:
        parts.append(f"_{answer.notice}_")
    sources = format_sources(answer.sources, answer.language)
    if sources:
        parts.append(sources)
    return "\n\n".join(part for part in parts if part)


# Commands: those that name another command write it as the platform does (`style`: `/jobs`, `/kb jobs` on Slack).
def no_kb_bound(lang: str, style: CommandStyle = SLASH_COMMANDS) -> str:
    """A command that needs a knowledge base, in a chat without one."""
    return catalogue(lang).text("kb.none_bound", command=form_usage("kb", "use", style.written("kb"), lang))


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


def kb_now_using(name: str, lang: str) -> str:
    """Confirms `/kb use`."""
    return catalogue(lang).text("kb.now_using", name=name)


def kb_info(name: str, description: str, counts: dict[str, int], lang: str) -> str:
    """The /kb info reply."""
    words = catalogue(lang)
    figures = words.text("kb.separator").join(
        words.get(f"kb.count.{what}", count=count) or f"{count} {what}" for what, count in counts.items()
    )
    described = words.text("kb.description", description=description) if description else ""
    return words.text("kb.info", name=name, description=described, figures=figures)


def source_detail(number: int, title: str, uri: str, text: str) -> str:
    """One source of /sources: its number and title (a link for web pages) and a snippet."""
    label = f"[{title}]({uri})" if web_url(uri) else title
    snippet = " ".join(text.split())
    if len(snippet) > 300:
        snippet = snippet[:299].rstrip() + "…"
    return f"[{number}] **{label}**\n> {snippet}" if snippet else f"[{number}] **{label}**"


def _job_name(job: JobRecord) -> str:
    # Uploads are stored under a random folder: the person knows them by their file name.
    return job.source.rsplit("/", 1)[-1] if job.kind in ("upload", "faq") else job.source


def _stage(job: JobRecord, lang: str) -> str:
    return catalogue(lang).get(f"job.stage.{job.stage}") or job.stage


def job_line(job: JobRecord, kb_name: str, lang: str) -> str:
    """One /jobs line: source, knowledge base, status and progress or outcome."""
    words = catalogue(lang)
    if job.status == "running":
        if job.total:
            state = words.text("job.progress", stage=_stage(job, lang), done=min(job.done, job.total), total=job.total)
        else:
            state = _stage(job, lang) or words.text("job.running")
    elif job.status == "queued":
        state = words.text("job.queued")
    elif job.status == "failed":
        state = words.text("job.failed_because", error=job.error)
    else:
        state = words.text("job.done")
    return words.text("jobs.line", source=_job_name(job), kb=kb_name, state=state)


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


def faq_deleted(question: str, lang: str) -> str:
    """Confirms `/faq delete`."""
    return catalogue(lang).text("faq.deleted", question=question)


def not_urls(args: list[str], lang: str) -> str:
    """`/ingest` with arguments that are not web addresses."""
    return catalogue(lang).text("ingest.not_urls", args=", ".join(args[:3]))


def file_too_large(name: str, size: str, limit: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """An upload over the size limit."""
    return catalogue(lang).text("ingest.file_too_large", name=name, size=size, limit=limit)


def file_unreadable(name: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """An attachment the platform gave no way to download."""
    return catalogue(lang).text("ingest.file_unreadable", name=name)


def ingest_queued(count: int, kb_name: str, lang: str) -> str:
    """The first text of an ingestion's status message."""
    return catalogue(lang).plural("ingest.queued", count, kb=kb_name)


def ingest_progress(jobs: list[JobRecord], lang: str) -> str:
    """The status message while jobs run: one line per job with its stage and progress."""
    words = catalogue(lang)
    lines = [words.text("ingest.line", name=_job_name(job), state=_job_progress(job, lang)) for job in jobs]
    return words.text("ingest.progress") + "\n" + "\n".join(lines)


def _job_progress(job: JobRecord, lang: str) -> str:
    words = catalogue(lang)
    if job.status == "queued":
        return words.text("job.waiting")
    if job.status == "running":
        counts = f" {min(job.done, job.total)}/{job.total}" if job.total else ""
        return f"{_stage(job, lang) or words.text('job.starting')}{counts}"
    return words.get(f"job.{job.status}") or job.status


def job_result(job: JobRecord, lang: str) -> str:
    """A short summary of a finished job for the chat that asked for it (bot.ingestion.describe_result's words)."""
    words = catalogue(lang)
    if job.status == "failed":
        return words.text("job.failed_because", error=job.error)
    result = job.result
    if job.kind == "faq":
        return words.text(
            "job.result.faq",
            created=result.get("created", 0),
            updated=result.get("updated", 0),
            unchanged=result.get("unchanged", 0),
        )
    chunks = int(result.get("chunks", 0))
    counted = words.plural("job.result.chunks", chunks)
    if result.get("unchanged"):
        return words.text("job.result.unchanged", chunks=counted)
    parts = int(result.get("segments", 0) or chunks)
    return words.text("job.result.indexed", chunks=counted, parts=words.plural("job.result.parts", parts))


def ingest_outcome(results: list[JobRecord], lang: str) -> str:
    """The final text of an ingestion's status message: each source with its counts or the reason it failed."""
    words = catalogue(lang)
    failed = sum(job.status == "failed" for job in results)
    head = (
        words.text("ingest.done_some", ok=len(results) - failed, total=len(results))
        if failed
        else words.text("ingest.done_all")
    )
    lines = [words.text("ingest.line", name=_job_name(job), state=job_result(job, lang)) for job in results]
    return head + "\n" + "\n".join(lines)


# Web chat
WEB_NEEDS_ACCESS: Final = "This ragbot is private: open the access link your admin gave you."
WEB_SESSION_EXPIRED: Final = "Your session is no longer valid. Reload the page to start a new one."
WEB_BAD_BODY: Final = 'The request body must be JSON like {"text": "your question"}.'
WEB_ADMIN_ONLY: Final = "Only admins can upload files. Enter the admin token first."
WEB_UPLOAD_FORM: Final = "Send the files as a multipart form with one or more `file` fields."
WEB_BAD_FEEDBACK: Final = 'Feedback must be JSON like {"message_id": "…", "value": "up"} (or "down").'
WEB_NO_SUCH_ANSWER: Final = "There is no such answer in this conversation."
WEB_NO_ADMIN: Final = "No admin token is configured for this ragbot (WEB_ADMIN_TOKEN)."
WEB_WRONG_TOKEN: Final = "That admin token is not right."


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


# Telegram
def telegram_text_only(lang: str) -> str:
    """A sticker, photo or voice note sent to the bot."""
    return catalogue(lang).text("telegram.text_only")


def telegram_file_too_big(name: str, limit: str, lang: str) -> str:
    """A document over what the Bot API lets a bot download."""
    return catalogue(lang).text("telegram.file_too_big", name=name, limit=limit)


# Slack
def slack_status(lang: str) -> str:
    """The thread's status line while an answer is looked for (Slack writes the app's name before it)."""
    return catalogue(lang).text("slack.status")


def slack_empty_mention(lang: str, style: CommandStyle = SLASH_COMMANDS) -> str:
    """A mention with nothing after it."""
    return catalogue(lang).text("slack.empty_mention", help=style.written("help"))


def slack_not_in_channel(lang: str) -> str:
    """A question asked with the slash command in a channel the bot is not in."""
    return catalogue(lang).text("slack.not_in_channel")


def slack_archived(lang: str) -> str:
    """A question asked with the slash command in an archived channel."""
    return catalogue(lang).text("slack.archived")


# Stored as the "answer" to a thread's messages from before the bot was mentioned, so they count as history; it is
# history the model reads, not a message anyone is shown.
SLACK_THREAD_UNANSWERED: Final = "(Earlier messages in this thread, from before I was asked.)"


def slack_asked(user_id: str, question: str, lang: str) -> str:
    """The message a question asked with the slash command is answered under (the command itself is invisible)."""
    return catalogue(lang).text("slack.asked", user=user_id, question=question)


def slack_file_login_page(name: str, lang: str) -> str:
    """A Slack file download that returned Slack's sign-in page instead of the file."""
    return catalogue(lang).text("slack.file_login_page", name=name)


def slack_file_missing(name: str, lang: str) -> str:
    """A file Slack no longer has (deleted, or from a workspace the bot can't read)."""
    return catalogue(lang).text("slack.file_missing", name=name)


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


def index_rebuilding(lang: str = DEFAULT_LANGUAGE) -> str:
    """Said to a chat that tries to change the index while `ragbot reindex` rebuilds it (raised in English below
    the command boundary, which translates it)."""
    return catalogue(lang).text("command.index_rebuilding")


def reindexed(names: Sequence[str], chunks: int, faq_questions: int) -> str:
    """The end of `ragbot reindex`."""
    counted = f"{_count(chunks, 'chunk')}, {_count(faq_questions, 'FAQ question')}"
    return f"reindexed {', '.join(names)} ({counted}): searches now read the new index"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
