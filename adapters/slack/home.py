"""The App Home tab: how to ask, the knowledge bases the person's DM reads, the commands (views.publish)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from adapters.slack import words as slack_words
from adapters.slack.agent import shorten
from adapters.slack.render import escape
from bot.types import CommandStyle

View = dict[str, Any]

# Block Kit: "up to 100 blocks in modals or Home tabs"; a section's text is at most 3,000 characters, a header's
# plain text at most 150.
MAX_BLOCKS: Final = 100
SECTION_MAX: Final = 3_000
HEADER_MAX: Final = 150


def _header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": shorten(text, HEADER_MAX), "emoji": True}}


def _sections(mrkdwn: str) -> list[dict[str, Any]]:
    """`mrkdwn` in as many sections as it needs, each within SECTION_MAX, cut between lines."""
    pieces: list[str] = []
    current = ""
    for line in mrkdwn.splitlines():
        line = line if len(line) <= SECTION_MAX else shorten(line, SECTION_MAX)
        if current and len(current) + 1 + len(line) > SECTION_MAX:
            pieces.append(current)
            current = ""
        current = f"{current}\n{line}" if current else line
    if current.strip():
        pieces.append(current)
    return [{"type": "section", "text": {"type": "mrkdwn", "text": piece}} for piece in pieces]


def home_view(kb_names: Sequence[str], help_text: str, lang: str, style: CommandStyle) -> View:
    """The Home tab in `lang`: how to ask, the knowledge bases (`kb_names`), the commands (`help_text`, Markdown
    whose backticks and dashes read the same in mrkdwn), within Slack's 100 blocks."""
    kbs = "\n".join(f"• {escape(name)}" for name in kb_names) if kb_names else slack_words.home_no_kbs(lang, style)
    blocks = [
        _header(slack_words.home_title(lang)),
        *_sections(slack_words.home_how(lang, style)),
        {"type": "divider"},
        _header(slack_words.home_kbs(lang)),
        *_sections(kbs),
        {"type": "divider"},
        _header(slack_words.home_commands(lang)),
        *_sections(escape(help_text)),
    ]
    return {"type": "home", "blocks": blocks[:MAX_BLOCKS]}
