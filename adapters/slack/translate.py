"""Slack events as platform-neutral messages: the workspace, channel and thread, whether the bot was addressed."""

from __future__ import annotations

import html
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from adapters.slack import words as slack_words
from bot.commands.registry import parse_command
from bot.types import Attachment, Command, CommandStyle, ConversationKey, IncomingMessage, UserRef

PLATFORM: Final = "slack"
# Message subtypes that are a person writing; edits, deletions, joins and bot posts never trigger an answer.
_SPOKEN_SUBTYPES: Final = frozenset({"", "file_share", "thread_broadcast"})
_FILE_COMMANDS: Final = frozenset({"ingest", "faq"})
_KB_SUBCOMMANDS: Final = frozenset({"list", "use", "info", "create"})
_FAQ_IMPORT: Final = "faq import"
_LINK = re.compile(r"<(?P<target>[^<>|]+)(?:\|(?P<label>[^<>]*))?>")

FileReader = Callable[[Mapping[str, Any]], Awaitable[bytes]]
"""Downloads a file given its entry in the event's `files`."""

Json = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Notice:
    """No question, but the person should be told something (a bare mention).

    `say` gives the text in the chat's language, which the adapter asks the manager for.
    """

    say: Callable[[str], str]


@dataclass(frozen=True, slots=True)
class Place:
    """Where an event happened, as ragbot keys it."""

    workspace: str
    channel: str
    # The thread the bot answers in (Slack's thread_ts; the message's own ts for a new thread); "" for a DM itself.
    reply_thread: str
    private: bool
    # A DM thread that is a conversation of its own (the agent view's, an assistant thread), not part of the DM's.
    apart: bool = False


def command_style(command: str) -> CommandStyle:
    """How commands are written in Slack: the app's one slash command (`/kb`) then the name (`/kb jobs`), the kb
    command's own forms right after it (`/kb list`); files never come with it, only shared in a message."""
    return CommandStyle(prefix=f"{command} ", bare="kb", attachments=False, files_note="slack.files")


def workspace_id(team_id: str | None, enterprise_id: str | None) -> str:
    """The workspace part of every key: the team, prefixed by its Enterprise Grid org when there is one."""
    team = team_id or ""
    return f"{enterprise_id}/{team}" if enterprise_id else team


def place(event: Json, workspace: str, *, threads_apart: bool = False) -> Place:
    """The channel and thread of a message event: a channel message is answered in its thread, a DM in the DM
    itself (in a thread only when the person wrote in one).

    `threads_apart` says the DM keeps each thread a conversation of its own, as Slack's agent view does: there every
    message a person writes is the root of a thread, answered in that thread.
    """
    channel = str(event.get("channel", ""))
    private = event.get("channel_type") == "im" or channel.startswith("D")
    apart = private and threads_apart
    rooted = not private or apart
    thread = str(event.get("thread_ts") or (event.get("ts") if rooted else "") or "")
    return Place(workspace, channel, thread, private, apart)


def conversation_key(where: Place) -> ConversationKey:
    """A channel thread is a conversation, and so is a DM thread kept apart; the rest of a DM is one conversation
    (its other threads included)."""
    thread = where.reply_thread if not where.private or where.apart else ""
    return ConversationKey(PLATFORM, where.workspace, where.channel, thread)


def mentions(text: str, bot_user_id: str) -> bool:
    """Whether the text mentions the bot (`<@U123>` or `<@U123|name>`)."""
    return bool(bot_user_id) and re.search(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", text) is not None


def plain_text(text: str, bot_user_id: str) -> str:
    """Slack's message markup as a person reads it: the bot's mention gone, links as their URL, &amp; decoded."""
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", text)

    def link(match: re.Match[str]) -> str:
        target, label = match.group("target"), match.group("label")
        if target.startswith(("http://", "https://")):
            return target
        if target.startswith("mailto:"):
            return label or target.removeprefix("mailto:")
        if target.startswith(("@", "#")):
            return f"{target[0]}{label}" if label else target
        if target.startswith("!"):
            return f"@{label or target[1:]}"
        return label or target

    return " ".join(html.unescape(_LINK.sub(link, text)).split())


def is_person_speaking(event: Json) -> bool:
    """A message a person wrote (not a bot's, not an edit, deletion or join)."""
    if event.get("bot_id") or event.get("bot_profile") or not event.get("user"):
        return False
    return str(event.get("subtype") or "") in _SPOKEN_SUBTYPES


def _attachments(event: Json, read: FileReader) -> tuple[Attachment, ...]:
    found = []
    for file in event.get("files") or ():
        if not isinstance(file, Mapping) or file.get("mode") == "tombstone":
            continue

        async def fetch(entry: Json = file) -> bytes:
            return await read(entry)

        found.append(
            Attachment(
                name=str(file.get("name") or file.get("title") or f"{file.get('id', 'file')}.bin"),
                size=int(file.get("size") or 0),
                mime_type=str(file.get("mimetype") or ""),
                read=fetch,
            )
        )
    return tuple(found)


def translate(
    event: Json,
    where: Place,
    *,
    bot_user_id: str,
    continuing: bool,
    read: FileReader,
    style: CommandStyle,
    user_name: str = "",
    verified_admin: bool = False,
) -> IncomingMessage | Notice | None:
    """The event as ragbot sees it; a Notice for what only deserves a short reply; None for what to ignore.

    `continuing` says the message is in a thread ragbot already answers in, so it needs no mention.
    """
    if not is_person_speaking(event):
        return None
    raw_text = str(event.get("text") or "")
    mentioned = event.get("type") == "app_mention" or mentions(raw_text, bot_user_id)
    text = plain_text(raw_text, bot_user_id)
    command = parse_command(text)
    attachments = _attachments(event, read)
    if attachments and command is None and (where.private or mentioned):
        # A file given to the bot is a file to learn; a sheet shared with the words "faq import", FAQs to import.
        if text.lower() == _FAQ_IMPORT:
            command = Command("faq", ("import",), "import")  # words the person typed
        else:
            command = Command("ingest", implied=True)
    addressed = where.private or mentioned or continuing
    if not addressed:
        return None
    if not text and command is None:
        return Notice(lambda lang: slack_words.empty_mention(lang, style)) if mentioned or where.private else None
    return IncomingMessage(
        key=conversation_key(where),
        message_id=str(event.get("ts", "")),
        user=UserRef(str(event.get("user", "")), user_name, verified_admin=verified_admin),
        text=text,
        attachments=attachments if command is not None and command.name in _FILE_COMMANDS else (),
        command=command,
        addressed=True,
        private=where.private,
        style=style,
        raw=event,
    )


def mistyped_word(text: str) -> str:
    """The slash command's text when it may be a mistyped command: one word, not a question; else ""."""
    words = text.split()
    return words[0].lower().lstrip("/") if len(words) == 1 and not words[0].endswith(("?", "？")) else ""


def slash_command(text: str, command_names: frozenset[str]) -> Command | None:
    """The slash command's text as one of ragbot's commands, or None when it is a question.

    `/kb jobs` runs /jobs, `/kb list` (use, info, create) is `/kb list`, an empty text is /help, anything else is asked.
    """
    words = text.strip()
    if not words:
        return Command("help")
    first, _, rest = words.partition(" ")
    name = first.lower().lstrip("/")
    if name in _KB_SUBCOMMANDS:
        return parse_command(f"/kb {words}")
    if name in command_names:
        return parse_command(f"/{name} {rest}")
    return None
