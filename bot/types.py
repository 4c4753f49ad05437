"""Platform-neutral chat values: who wrote what where, and the answer that goes back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

Outcome = Literal[
    "faq_direct",
    "generated",
    "extractive",
    "no_match",
    "refused",
    "smalltalk",
    "model_error",
    "failed",
    "stopped",
    "timed_out",
    "interrupted",
    "chat",
]


@dataclass(frozen=True, slots=True)
class ConversationKey:
    """Where a conversation lives: platform, workspace (Slack team, empty elsewhere), chat, thread."""

    platform: str
    workspace: str
    chat: str
    thread: str = ""

    @property
    def chat_key(self) -> ConversationKey:
        """The chat this conversation belongs to (thread cleared): what bindings are stored for."""
        return ConversationKey(self.platform, self.workspace, self.chat)


@dataclass(frozen=True, slots=True)
class UserRef:
    """The person who wrote a message, by the platform's user id."""

    id: str
    name: str = ""
    # Set by an adapter that proved admin rights itself (the web chat's admin token); elsewhere ids are listed.
    verified_admin: bool = False
    # The language the person's app is set to (an IETF tag such as "zh-hans"), when the platform says.
    language: str = ""


@dataclass(frozen=True, slots=True)
class MessageRef:
    """A message the bot sent, by the platform's id for it."""

    id: str


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file sent with a message; `read` fetches its bytes (None when the platform gave no way to)."""

    name: str
    size: int
    mime_type: str = ""
    read: Callable[[], Awaitable[bytes]] | None = None
    # How long a voice message or audio clip plays, when the platform says (it is refused by length unread).
    seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed chat command: `/faq add "Q" "A"` is name `faq`, args ("add", "Q", "A")."""

    name: str
    args: tuple[str, ...] = ()
    raw: str = ""
    # The catalogue id (bot/words) of why the arguments could not be read (an unclosed quote); empty when they were.
    error: str = ""
    # Set by an adapter for what the person did rather than typed (a file sent to the bot is /ingest).
    implied: bool = False


@dataclass(frozen=True, slots=True)
class CommandStyle:
    """How people write ragbot's commands on a platform, and which forms of them it takes there.

    Telegram and the web chat write `/NAME ARGS` and take files with a command. Slack has one slash command, so
    `/kb NAME ARGS`, with the kb command's own forms right after it (`/kb list`), and no files with it: files
    reach the bot shared in a message, as the catalogue text `files_note` (an id) tells.
    """

    prefix: str = "/"
    # The command whose forms follow the prefix alone (Slack's `/kb list` is the kb command's `list`).
    bare: str = ""
    attachments: bool = True
    files_note: str = ""

    def written(self, command: str) -> str:
        """A command and its words as people write them here: "jobs" is `/jobs` or `/kb jobs`, "kb use" `/kb use`."""
        name, _, words = command.partition(" ")
        head = self.prefix.rstrip() if name == self.bare else f"{self.prefix}{name}"
        return f"{head} {words}" if words else head


SLASH_COMMANDS: Final = CommandStyle()
"""`/NAME ARGS`, files attached to the command: Telegram, the web chat, the terminal."""


@dataclass(frozen=True, slots=True)
class IncomingMessage:
    """One message a person sent, stripped of platform syntax by the adapter's translate step.

    `addressed` says the bot was spoken to (a mention, a reply to the bot, a command, a private chat);
    `private` says the chat has only this person and the bot; `style` how the platform writes commands (what help,
    usage and refusals say). `raw` is the platform payload, an escape hatch.
    """

    key: ConversationKey
    message_id: str
    user: UserRef
    text: str
    attachments: tuple[Attachment, ...] = ()
    reply_to: MessageRef | None = None
    command: Command | None = None
    addressed: bool = True
    private: bool = True
    style: CommandStyle = SLASH_COMMANDS
    # Set by an adapter that chose the conversation a command acts on as the one the person last asked in, since
    # they named none (a Slack slash command, a Telegram group command replying to nothing): replies say which.
    latest_conversation: bool = False
    raw: Any = None


def web_url(uri: str) -> str:
    """`uri` when it is a web address a person can open (http or https), else "" (files, uploads)."""
    return uri if uri.startswith(("http://", "https://")) else ""


@dataclass(frozen=True, slots=True)
class SourceLink:
    """One numbered source shown under an answer."""

    number: int
    title: str
    document_id: str = ""
    url: str = ""
    snippet: str = ""
    # A query's result (data analysis): its column names, then its rows, as text cells; shown as a table.
    table: tuple[tuple[str, ...], ...] = ()
    # The page of its document the passage starts on (PDF, TIFF, a scan read by OCR); 0 where pages mean nothing.
    page: int = 0


@dataclass(frozen=True, slots=True)
class Answer:
    """The whole of an answer as it ends: its text, its sources and how it ended."""

    text: str
    sources: tuple[SourceLink, ...] = ()
    outcome: str = ""
    # The stored assistant message, for feedback buttons; empty where nothing was stored (command replies).
    message_id: str = ""
    notice: str = ""
    # The language code of the turn (bot.words): what the sources heading is written in.
    language: str = "en"

    @property
    def takes_feedback(self) -> bool:
        """Whether people may rate it (feedback buttons): a stored answer, not a refusal or a small-talk reply."""
        return bool(self.message_id) and self.outcome not in ("refused", "smalltalk")
