"""An answer as Slack shows it: standard Markdown for the text, a context block of sources, feedback buttons."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from bot.types import Answer, SourceLink, web_url
from bot.words.messages import sources_heading

FEEDBACK_ACTION: Final = "ragbot_feedback"
# chat.postMessage / chat.update markdown_text, each stream call, and all markdown blocks of one message together.
MAX_MARKDOWN: Final = 12_000
# A context block holds at most 10 elements (Block Kit reference).
_CONTEXT_ELEMENTS: Final = 10
# Notifications and screen readers get this much of the answer when the message is blocks.
_FALLBACK_CHARS: Final = 3_000

Block = dict[str, Any]
_TEXT_BLOCKS: Final = frozenset({"markdown", "rich_text", "section"})


def escape(text: str) -> str:
    """Text made safe inside Slack mrkdwn (only &, < and > are special there)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def body(answer: Answer) -> str:
    """The answer's Markdown without its sources: the text, then its notice."""
    parts = [answer.text.strip()]
    if answer.notice:
        parts.append(f"_{answer.notice}_")
    return "\n\n".join(part for part in parts if part)


def _source(source: SourceLink) -> str:
    title = escape(" ".join((source.title or source.document_id or "untitled").split()))
    url = web_url(source.url)
    return f"[{source.number}] <{url}|{title}>" if url and "|" not in url else f"[{source.number}] {title}"


def sources_block(sources: Sequence[SourceLink], lang: str = "en") -> Block | None:
    """The sources as one context block (small grey text under the answer), headed in `lang`; None without any."""
    if not sources:
        return None
    lines = [_source(source) for source in sources]
    room = _CONTEXT_ELEMENTS - 1
    if len(lines) > room:
        lines = [*lines[: room - 1], "  ".join(lines[room - 1 :])]
    elements = [{"type": "mrkdwn", "text": f"*{sources_heading(lang)}:*"}]
    elements += [{"type": "mrkdwn", "text": line} for line in lines]
    return {"type": "context", "elements": elements}


def feedback_block(message_id: str) -> Block:
    """Slack's feedback buttons (👍 / 👎) for a stored answer; the value carries its id."""
    return {
        "type": "context_actions",
        "elements": [
            {
                "type": "feedback_buttons",
                "action_id": FEEDBACK_ACTION,
                "positive_button": {"text": {"type": "plain_text", "text": "👍"}, "value": f"up:{message_id}"},
                "negative_button": {"text": {"type": "plain_text", "text": "👎"}, "value": f"down:{message_id}"},
            }
        ],
    }


def trailing_blocks(answer: Answer) -> list[Block]:
    """What goes under an answer's text: its sources, then feedback buttons when it is an answer people rate."""
    blocks = [block] if (block := sources_block(answer.sources, answer.language)) is not None else []
    if answer.takes_feedback:
        blocks.append(feedback_block(answer.message_id))
    return blocks


def is_feedback_block(block: Block) -> bool:
    """Whether a block of a posted message holds ragbot's feedback buttons."""
    return block.get("type") == "context_actions" and any(
        isinstance(element, dict) and element.get("action_id") == FEEDBACK_ACTION
        for element in block.get("elements") or ()
    )


def with_choice(blocks: list[Block], choice: str) -> list[Block]:
    """A rated answer's blocks: its feedback buttons replaced by the choice made ("👍 Thanks for the feedback")."""
    chosen: Block = {"type": "context", "elements": [{"type": "mrkdwn", "text": escape(choice)}]}
    return [chosen if is_feedback_block(block) else block for block in blocks]


def shows_text(blocks: list[Block]) -> bool:
    """Whether the blocks hold the message's text (a streamed message keeps its text outside its blocks)."""
    return any(block.get("type") in _TEXT_BLOCKS for block in blocks)


def markdown_block(text: str) -> Block:
    """Standard Markdown as a block (for messages that also carry other blocks)."""
    return {"type": "markdown", "text": text}


def fallback_text(markdown: str) -> str:
    """The `text` Slack uses for notifications when a message is blocks."""
    line = " ".join(markdown.split())
    return line if len(line) <= _FALLBACK_CHARS else line[: _FALLBACK_CHARS - 1] + "…"


def parse_feedback(value: str) -> tuple[str, str] | None:
    """A feedback button's value as (up|down, stored answer id); None for anything else."""
    verdict, _, message_id = value.partition(":")
    return (verdict, message_id) if verdict in ("up", "down") and message_id else None
