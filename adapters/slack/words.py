"""What the Slack adapter says itself, in the chat's language (texts: adapters/slack/locales/<code>.toml)."""

from __future__ import annotations

from typing import Final

from adapters.slack.render import escape
from bot.types import SLASH_COMMANDS, CommandStyle
from bot.words.catalogue import catalogue

# Stored as the "answer" to a thread's messages from before the bot was mentioned, so they count as history; it is
# history the model reads, not a message anyone is shown.
THREAD_UNANSWERED: Final = "(Earlier messages in this thread, from before I was asked.)"


def status(lang: str) -> str:
    """The thread's status line while an answer is looked for (Slack writes the app's name before it)."""
    return catalogue(lang).text("slack.status")


def empty_mention(lang: str, style: CommandStyle = SLASH_COMMANDS) -> str:
    """A mention with nothing after it."""
    return catalogue(lang).text("slack.empty_mention", help=style.written("help"))


def not_in_channel(lang: str) -> str:
    """A question asked with the slash command in a channel the bot is not in."""
    return catalogue(lang).text("slack.not_in_channel")


def archived(lang: str) -> str:
    """A question asked with the slash command in an archived channel."""
    return catalogue(lang).text("slack.archived")


def asked(user_id: str, question: str, lang: str) -> str:
    """The message a question asked with the slash command is answered under (the command itself is invisible):
    mrkdwn, with the question escaped so that its "<!channel>" or "<@U…>" notifies nobody."""
    return catalogue(lang).text("slack.asked", user=user_id, question=escape(question))


def file_login_page(name: str, lang: str) -> str:
    """A Slack file download that returned Slack's sign-in page instead of the file."""
    return catalogue(lang).text("slack.file_login_page", name=name)


def file_missing(name: str, lang: str) -> str:
    """A file Slack no longer has (deleted, or from a workspace the bot can't read)."""
    return catalogue(lang).text("slack.file_missing", name=name)


def prompts_heading(lang: str) -> str:
    """The heading over the suggested prompts shown when a person opens the DM."""
    return catalogue(lang).text("slack.prompts_heading")


def home_title(lang: str) -> str:
    """The App Home tab's header (plain text, at most 150 characters)."""
    return catalogue(lang).text("slack.home_title")


def home_how(lang: str, style: CommandStyle = SLASH_COMMANDS) -> str:
    """How to ask, on the App Home tab (mrkdwn)."""
    return catalogue(lang).text("slack.home_how", ask=style.written("kb"))


def home_kbs(lang: str) -> str:
    """The App Home tab's header over the knowledge bases the person's DM reads."""
    return catalogue(lang).text("slack.home_kbs")


def home_no_kbs(lang: str, style: CommandStyle = SLASH_COMMANDS) -> str:
    """The App Home tab when the person's DM reads no knowledge base."""
    return catalogue(lang).text("slack.home_no_kbs", use=style.written("kb use NAME"))


def home_commands(lang: str) -> str:
    """The App Home tab's header over the commands."""
    return catalogue(lang).text("slack.home_commands")
