"""Every fixed thing the bot says to a person, and how an answer's sources are written under it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from bot.types import Answer, SourceLink, web_url
from storage.records import JobRecord

SOURCES_HEADING: Final = "Sources"

# Turns
TURN_FAILED: Final = "Sorry, something went wrong while I was answering. Please try again in a moment."
SEARCHING: Final = "Searching the knowledge base…"
QUESTION_CUT: Final = "Your question was very long, so I answered from its first part."
STOPPED_NOTE: Final = "(stopped)"
NOTHING_TO_STOP: Final = "There is no answer being written to stop."
STOPPING: Final = "Stopping the answer."
NEW_CONVERSATION: Final = "Started a new conversation: earlier messages are no longer used as context."


def rate_limited(retry_after: float) -> str:
    """The polite answer to someone sending faster than the rate limit allows."""
    seconds = max(1, round(retry_after))
    return f"You're sending messages faster than I can answer. Please wait about {seconds} s and ask again."


def queued(place: int) -> str:
    """Told to someone whose question waits for the answers before it in the same conversation."""
    if place <= 1:
        return "I'm still answering your previous message; yours is next."
    return f"I'm still answering earlier messages here; yours is number {place} in line."


def format_source(source: SourceLink) -> str:
    """One source line in Markdown: `[n] title` linked when the source is a URL."""
    title = source.title or source.document_id or "untitled"
    label = f"[{title}]({source.url})" if web_url(source.url) else title
    return f"[{source.number}] {label}"


def format_sources(sources: Sequence[SourceLink]) -> str:
    """The sources block under an answer, in Markdown; empty when there are none."""
    if not sources:
        return ""
    return f"**{SOURCES_HEADING}**\n" + "\n".join(f"- {format_source(source)}" for source in sources)


def answer_with_sources(answer: Answer) -> str:
    """An answer's whole visible text: the answer, its notice, then its sources."""
    parts = [answer.text.strip()]
    if answer.notice:
        parts.append(f"_{answer.notice}_")
    sources = format_sources(answer.sources)
    if sources:
        parts.append(sources)
    return "\n\n".join(part for part in parts if part)


# Commands
UNCLOSED_QUOTE: Final = "I couldn't read that command: a quote is not closed."
NO_KB_BOUND: Final = "This chat has no knowledge base yet. An admin can pick one with /kb use NAME."
NO_SOURCES: Final = "My last answer here had no sources."
NO_JOBS: Final = "No ingestion jobs yet for this chat's knowledge base."
NOTHING_TO_INGEST: Final = "Attach files (or reply to a file) with /ingest, or give web addresses: /ingest https://…"
NO_FAQ_SHEET: Final = "Attach an FAQ sheet (.csv, .xlsx or .json) with /faq import. The layout: `ragbot faq template`."


def usage(text: str) -> str:
    """How a command is written, after a command that was not."""
    return f"Usage: {text}"


def unknown_command(name: str) -> str:
    """The reply to a command that does not exist."""
    return f"I don't know the command /{name}. Send /help to see what I can do."


def admins_only(name: str) -> str:
    """The refusal a non-admin gets for an admin command."""
    return f"Only admins can use /{name}. Ask one of your ragbot admins."


def help_text(commands: list[tuple[str, str]]) -> str:
    """The /help reply: what to ask, then each command this person may use."""
    lines = ["Ask me a question and I'll answer from the knowledge base, with sources.", ""]
    lines += [f"- `{usage_}`: {text}" for usage_, text in commands]
    return "\n".join(lines)


def mode_set(mode: str) -> str:
    """Confirms the chat's answer mode."""
    if mode == "all":
        return "I'll answer every question in this chat."
    return "I'll answer here only when mentioned, replied to, or given a command."


def fallback_set(text: str) -> str:
    """Confirms /fallback."""
    if not text:
        return "When nothing fits, I'll answer here with the default reply."
    return f"When nothing fits, I'll answer here: “{text}”"


def kb_list(entries: list[tuple[str, str, bool]]) -> str:
    """The /kb list reply: each knowledge base, the ones this chat reads marked."""
    if not entries:
        return "There are no knowledge bases yet."
    lines = [
        f"- **{name}**{' (in use here)' if used else ''}{f': {description}' if description else ''}"
        for name, description, used in entries
    ]
    return "Knowledge bases:\n" + "\n".join(lines)


def kb_missing(name: str) -> str:
    """`/kb use` or `/kb info` of a name that does not exist."""
    return f"There is no knowledge base called “{name}”. Send /kb list to see them."


def kb_not_allowed(name: str) -> str:
    """`/kb use` of a knowledge base this chat may not read."""
    return f"This chat may not read the knowledge base “{name}”. Send /kb list to see the ones it may."


def kb_now_using(name: str) -> str:
    """Confirms `/kb use`."""
    return f"This chat now answers from **{name}**."


def kb_info(name: str, description: str, counts: dict[str, int]) -> str:
    """The /kb info reply."""
    figures = ", ".join(f"{count} {what}" for what, count in counts.items())
    return f"**{name}**{f': {description}' if description else ''}\n{figures}"


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


def job_line(job: JobRecord, kb_name: str) -> str:
    """One /jobs line: source, knowledge base, status and progress or outcome."""
    source = _job_name(job)
    if job.status == "running":
        state = f"{job.stage} {min(job.done, job.total)}/{job.total}" if job.total else job.stage or "running"
    elif job.status == "queued":
        state = "queued"
    elif job.status == "failed":
        state = f"failed: {job.error}"
    else:
        state = "done"
    return f"- `{source}` → {kb_name}: {state}"


def faq_added(kb_name: str, *, created: bool) -> str:
    """Confirms `/faq add`."""
    return f"FAQ {'added to' if created else 'updated in'} **{kb_name}**."


def faq_list(kb_name: str, faqs: list[tuple[str, str]], limit: int) -> str:
    """The /faq list reply: short ids (for /faq delete) and questions."""
    if not faqs:
        return f"**{kb_name}** has no FAQs yet."
    lines = [f"- `{faq_id[:8]}` {question}" for faq_id, question in faqs[:limit]]
    more = f"\n…and {len(faqs) - limit} more." if len(faqs) > limit else ""
    return f"FAQs in **{kb_name}** ({len(faqs)}):\n" + "\n".join(lines) + more


def faq_missing(faq_id: str) -> str:
    """`/faq delete` of an id this chat's knowledge bases do not hold."""
    return f"No FAQ with the id {faq_id} here. Send /faq list to see the ids."


def faq_ambiguous(faq_id: str) -> str:
    """`/faq delete` of a short id that fits more than one FAQ."""
    return f"More than one FAQ starts with {faq_id}: give more of the id."


def faq_deleted(question: str) -> str:
    """Confirms `/faq delete`."""
    return f"Deleted the FAQ “{question}”."


def not_urls(args: list[str]) -> str:
    """`/ingest` with arguments that are not web addresses."""
    shown = ", ".join(args[:3])
    return f"I can only ingest attached files and web addresses (http:// or https://), not: {shown}"


def file_too_large(name: str, size: str, limit: str) -> str:
    """An upload over the size limit."""
    return f"{name} is {size}, over the {limit} limit. Split it into smaller files, or ask an admin to raise the limit."


def file_unreadable(name: str) -> str:
    """An attachment the platform gave no way to download."""
    return f"I couldn't download {name} from the chat. Please send it again."


def ingest_queued(count: int, kb_name: str) -> str:
    """The first text of an ingestion's status message."""
    return f"Queued {count} item{'s' if count != 1 else ''} for **{kb_name}**…"


def ingest_progress(jobs: list[JobRecord]) -> str:
    """The status message while jobs run: one line per job with its stage and progress."""
    return "Ingesting…\n" + "\n".join(_job_progress(job) for job in jobs)


def _job_progress(job: JobRecord) -> str:
    name = _job_name(job)
    if job.status == "queued":
        return f"- {name}: waiting"
    if job.status == "running":
        counts = f" {min(job.done, job.total)}/{job.total}" if job.total else ""
        return f"- {name}: {job.stage or 'starting'}{counts}"
    return f"- {name}: {job.status}"


def ingest_outcome(results: list[tuple[JobRecord, str]]) -> str:
    """The final text of an ingestion's status message: each source with its counts or the reason it failed."""
    failed = sum(job.status == "failed" for job, _ in results)
    head = f"Ingested {len(results) - failed} of {len(results)}." if failed else "Done: everything was ingested."
    lines = []
    for job, summary in results:
        lines.append(f"- {_job_name(job)}: {summary}")
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


# Telegram
TELEGRAM_TEXT_ONLY: Final = "I can read text questions and documents, not stickers, photos or voice messages."
FEEDBACK_THANKS: Final = "Thanks for the feedback!"
FEEDBACK_GONE: Final = "That answer is no longer part of this conversation."


def telegram_file_too_big(name: str, limit: str) -> str:
    """A document over what the Bot API lets a bot download."""
    return (
        f"{name} is larger than the {limit} Telegram lets bots download. Send a smaller file, or have your admin "
        "run a self-hosted Bot API server (TELEGRAM_API_BASE_URL, TELEGRAM_FILE_BASE_URL), which lifts the limit."
    )


# Slack
SLACK_STATUS: Final = "is searching the knowledge base…"
SLACK_EMPTY_MENTION: Final = "Ask me a question after the mention, like “@ragbot how do I …?”, or try `/kb help`."
SLACK_NOT_IN_CHANNEL: Final = "I'm not in this channel: invite me with `/invite @ragbot`, then ask again."
SLACK_ARCHIVED: Final = "This channel is archived, so I can't answer here."
# Stored as the "answer" to a thread's messages from before the bot was mentioned, so they count as history.
SLACK_THREAD_UNANSWERED: Final = "(Earlier messages in this thread, from before I was asked.)"


def slack_asked(user_id: str, question: str) -> str:
    """The message a question asked with the slash command is answered under (the command itself is invisible)."""
    return f"<@{user_id}> asked: {question}"


def slack_file_login_page(name: str) -> str:
    """A Slack file download that returned Slack's sign-in page instead of the file."""
    return (
        f"I couldn't download {name}: Slack sent its sign-in page instead of the file. The app needs the "
        "files:read scope (reinstall it from the manifest), then send the file again."
    )


def slack_file_missing(name: str) -> str:
    """A file Slack no longer has (deleted, or from a workspace the bot can't read)."""
    return f"I couldn't fetch {name} from Slack: it was deleted or I'm not allowed to read it."


# The search index
def index_outdated(missing: Mapping[Any, Sequence[str]]) -> str:
    """Told once (CLI line, serve log) when the index predates this version; answers still work meanwhile."""
    return (
        f"the search index was built by an older ragbot (it lacks {_lacking(missing)}): answers still work, but "
        "read SQL on every search until `ragbot reindex --kb NAME` rebuilds it"
    )


def index_rebuild_all(missing: Mapping[Any, Sequence[str]]) -> str:
    """Said when a reindex finds an index of an older version, which it rebuilds whole."""
    return f"the index was built by an older ragbot (it lacks {_lacking(missing)}): rebuilding every knowledge base"


def _lacking(missing: Mapping[Any, Sequence[str]]) -> str:
    """The missing properties of every collection, by name, once each."""
    return ", ".join(sorted({name for names in missing.values() for name in names}))


def reindex_busy(jobs: int) -> str:
    """Why a reindex does not start: ingestion jobs would write into the index being replaced."""
    return (
        f"{_count(jobs, 'ingestion job')} {'is' if jobs == 1 else 'are'} queued or running: reindex once "
        "`ragbot jobs --status queued --status running` lists none"
    )


def reindex_running(owner: str) -> str:
    """Why a second reindex does not start."""
    return f"another reindex is running ({owner}): wait for it to finish, then run this again"


def index_rebuilding() -> str:
    """Said to a chat that tries to change the index while `ragbot reindex` rebuilds it."""
    return "The search index is being rebuilt right now. Try again in a few minutes."


def reindexed(names: Sequence[str], chunks: int, faq_questions: int) -> str:
    """The end of `ragbot reindex`."""
    counted = f"{_count(chunks, 'chunk')}, {_count(faq_questions, 'FAQ question')}"
    return f"reindexed {', '.join(names)} ({counted}): searches now read the new index"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
