"""An answer as Slack shows it: standard Markdown for the text, a context block of sources, feedback buttons."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from bot.types import Answer, SourceLink, web_url
from bot.words.messages import source_title, sources_heading
from bot.words.table import monospace_table

FEEDBACK_ACTION: Final = "ragbot_feedback"
# chat.postMessage / chat.update markdown_text, each stream call, and all markdown blocks of one message together.
MAX_MARKDOWN: Final = 12_000
# A context block holds at most 10 elements (Block Kit reference).
_CONTEXT_ELEMENTS: Final = 10
# A section block's text holds at most 3,000 characters (Block Kit reference).
_SECTION_CHARS: Final = 3_000
# Notifications and screen readers get this much of the answer when the message is blocks.
_FALLBACK_CHARS: Final = 3_000

Block = dict[str, Any]
_TEXT_BLOCKS: Final = frozenset({"markdown", "rich_text", "section"})


# Slack's own syntax opens with "<" (or an entity of it, should a renderer decode one first): a special mention
# (<!channel>, <!here>, <!subteam^…>), a user or channel (<@U…>, <#C…>), or a link (<https://…|label>, <mailto:…>).
# A URI scheme is at most 32 characters here, so a stream can tell a link's opening from text within that much;
# "::" is code (std::string), never a link.
_SCHEME_MAX: Final = 32
_SPECIAL: Final = re.compile(
    rf"(<|&lt;?|&#0{{0,5}}60;|&#x0{{0,4}}3c;)(?=[!@#]|[a-z][a-z0-9+.\-]{{0,{_SCHEME_MAX - 1}}}:(?!:))", re.IGNORECASE
)
# The end of a text that may still become the opening of Slack syntax once more text follows it.
_UNDECIDED: Final = re.compile(rf"(?:<|&[#a-z0-9]{{0,10}};?)[a-z0-9+.\-]{{0,{_SCHEME_MAX}}}:?\Z", re.IGNORECASE)
# Invisible, and no parser of Slack's reads "<" + it + "!channel>" as a mention (nor a link, nor an entity).
_WORD_JOINER: Final = "\u2060"


def escape(text: str) -> str:
    """Text made safe inside Slack mrkdwn (only &, < and > are special there)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def neutralise(markdown: str) -> str:
    """Markdown the bot did not compose (a person's words, a document's, the model's) with Slack's syntax defused.

    Every message and stream text ragbot posts passes here (markdown_text, markdown blocks) or through `escape`
    (mrkdwn `text`), so a `<!channel>`, `<@U…>` or `<#C…>` it quotes notifies nobody and a `<url|label>` hides no
    link. Idempotent; the text reads the same, with an invisible word joiner after each such "<".
    """
    return _SPECIAL.sub(lambda match: match.group(1) + _WORD_JOINER, markdown)


def settled(markdown: str) -> int:
    """How much of a text still being written `neutralise` can already decide: all of it but an opening "<" (or
    "&…") whose next characters are yet to come. neutralise(a) + neutralise(b) == neutralise(a + b) when a is
    cut there."""
    found = _UNDECIDED.search(markdown)
    return found.start() if found is not None else len(markdown)


def body(answer: Answer) -> str:
    """The answer's Markdown without its sources: the text, then its notice."""
    parts = [answer.text.strip()]
    if answer.notice:
        parts.append(f"_{answer.notice}_")
    return "\n\n".join(part for part in parts if part)


def _source(source: SourceLink, lang: str) -> str:
    title = escape(" ".join(source_title(source, lang).split()))
    url = web_url(source.url)
    # A "|", "<", ">" or space would end the link early, and what follows it would be read as Slack syntax.
    linkable = url and not any(char in url for char in "|<> ") and url.isprintable()
    return f"[{source.number}] <{url}|{title}>" if linkable else f"[{source.number}] {title}"


def sources_block(sources: Sequence[SourceLink], lang: str = "en") -> Block | None:
    """The sources as one context block (small grey text under the answer), headed in `lang`; None without any."""
    if not sources:
        return None
    lines = [_source(source, lang) for source in sources]
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


def table_blocks(sources: Sequence[SourceLink]) -> list[Block]:
    """Each query result among the sources as a section of monospace text, cut to whole lines that fit one."""
    blocks: list[Block] = []
    for source in sources:
        if not source.table:
            continue
        lines = escape(monospace_table(source.table)).splitlines()
        head, tail = f"[{source.number}]\n```", "```"
        kept: list[str] = []
        for line in lines:
            if len(head) + sum(len(k) + 1 for k in kept) + len(line) + 1 + len(tail) > _SECTION_CHARS:
                break
            kept.append(line)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": head + "\n".join(kept) + tail}})
    return blocks


def trailing_blocks(answer: Answer) -> list[Block]:
    """What goes under an answer's text: its sources (query results drawn as tables), then feedback buttons when it
    is an answer people rate."""
    blocks = [block] if (block := sources_block(answer.sources, answer.language)) is not None else []
    blocks += table_blocks(answer.sources)
    if answer.takes_feedback:
        blocks.append(feedback_block(answer.message_id))
    return blocks


def is_feedback_block(block: Block) -> bool:
    """Whether a block of a posted message holds ragbot's feedback buttons."""
    return block.get("type") == "context_actions" and any(
        isinstance(element, dict) and element.get("action_id") == FEEDBACK_ACTION
        for element in block.get("elements") or ()
    )


def with_choice(blocks: list[Block], choice: str, after: Sequence[Block] = ()) -> list[Block]:
    """A rated answer's blocks: its feedback buttons replaced by the choice made ("👍 Thanks for the feedback"),
    then `after` (a 👎's "Tell us why" button)."""
    chosen: Block = {"type": "context", "elements": [{"type": "mrkdwn", "text": escape(choice)}]}
    shown: list[Block] = []
    for block in blocks:
        shown += [chosen, *after] if is_feedback_block(block) else [block]
    return shown


def shows_text(blocks: list[Block]) -> bool:
    """Whether the blocks hold the message's text (a streamed message keeps its text outside its blocks)."""
    return any(block.get("type") in _TEXT_BLOCKS for block in blocks)


def markdown_block(text: str) -> Block:
    """Standard Markdown as a block (for messages that also carry other blocks), its Slack syntax defused."""
    return {"type": "markdown", "text": neutralise(text)}


def fallback_text(markdown: str) -> str:
    """The `text` Slack uses for notifications when a message is blocks: one line of mrkdwn, escaped."""
    line = " ".join(markdown.split())
    line = line if len(line) <= _FALLBACK_CHARS else line[: _FALLBACK_CHARS - 1] + "…"
    return escape(line)


def parse_feedback(value: str) -> tuple[str, str] | None:
    """A feedback button's value as (up|down, stored answer id); None for anything else."""
    verdict, _, message_id = value.partition(":")
    return (verdict, message_id) if verdict in ("up", "down") and message_id else None
