"""Message content as Slack checks and shows it: text, markdown_text, blocks, stream chunks, what a person reads."""

from __future__ import annotations

from typing import Any

from fakes.base import Json
from fakes.slack.records import Message
from fakes.slack.wire import SlackError, json_list, opt

MAX_TEXT = 40_000  # chat.postMessage truncates `text` beyond this (changelog 2018-04), it does not refuse it
MAX_MARKDOWN = 12_000  # markdown_text per call, and all markdown blocks of one message together
MAX_SECTION_TEXT = 3_000
MAX_BLOCKS = 50


def content(params: Json) -> tuple[str | None, str | None, list[Json] | None]:
    """text, markdown_text and blocks of a post or update, checked as Slack checks them."""
    text, markdown = opt(params, "text"), opt(params, "markdown_text")
    blocks = json_list(params.get("blocks"), "invalid_blocks")
    if markdown is not None and (text is not None or blocks is not None):
        raise SlackError("markdown_text_conflict")
    if markdown is not None and len(markdown) > MAX_MARKDOWN:
        raise SlackError("msg_too_long")
    if not (text or markdown or blocks or params.get("attachments")):
        raise SlackError("no_text")
    if blocks is not None:
        _check_blocks(blocks)
    return (text[:MAX_TEXT] if text is not None else None), markdown, blocks


def _check_blocks(blocks: list[Json]) -> None:
    if len(blocks) > MAX_BLOCKS or any(not isinstance(block.get("type"), str) for block in blocks):
        raise SlackError("invalid_blocks")
    for block in blocks:
        text = block.get("text")
        if block["type"] == "section" and isinstance(text, dict) and len(str(text.get("text", ""))) > MAX_SECTION_TEXT:
            raise SlackError("invalid_blocks")
    if sum(len(str(block.get("text", ""))) for block in blocks if block["type"] == "markdown") > MAX_MARKDOWN:
        raise SlackError("msg_blocks_too_long")


def stream_content(params: Json) -> tuple[str, list[Json], list[Json], str | None]:
    """One stream call's text delta, blocks and other chunks, and its mode (None when it carries nothing)."""
    markdown = opt(params, "markdown_text")
    chunks = json_list(params.get("chunks"), "invalid_chunks")
    if markdown is not None and chunks is not None:
        raise SlackError("invalid_arguments")
    pieces = [markdown] if markdown else []
    blocks: list[Json] = []
    others: list[Json] = []
    for chunk in chunks or []:
        kind = chunk.get("type")
        if kind == "markdown_text":
            pieces.append(str(chunk.get("text", "")))
        elif kind == "blocks":
            blocks += json_list(chunk.get("blocks"), "invalid_chunks") or []
        elif kind in ("task_update", "plan_update"):
            others.append(chunk)
        else:
            raise SlackError("invalid_chunks")
    delta = "".join(pieces)
    if len(delta) > MAX_MARKDOWN:  # per call, not cumulative
        raise SlackError("msg_too_long")
    mode = "markdown_text" if markdown is not None else "chunks" if chunks else None
    return delta, blocks, others, mode


def reads(message: Message) -> str:
    """What a person reads: a stream's deltas then its blocks, else markdown_text, else the blocks, else text."""
    if message.deltas is not None:
        return "\n".join(part for part in ("".join(message.deltas), blocks_text(message.blocks)) if part)
    if message.markdown is not None:
        return message.markdown
    if message.blocks:
        return blocks_text(message.blocks)  # with blocks, `text` is only the notification fallback
    return message.text or ""


def blocks_text(blocks: list[Json]) -> str:
    """The readable text of section, header, markdown, context and rich_text blocks, one block a line."""
    lines: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind in ("section", "header"):
            parts = [block.get("text"), *(block.get("fields") or [])]
            lines.extend(str(part.get("text", "")) for part in parts if isinstance(part, dict))
        elif kind == "markdown":
            lines.append(str(block.get("text", "")))
        elif kind == "context":
            elements = block.get("elements") or []
            lines.append(" ".join(str(e.get("text", "")) for e in elements if isinstance(e, dict) and "text" in e))
        elif kind == "rich_text":
            lines.append(_rich_text(block))
    return "\n".join(line for line in lines if line)


def _rich_text(node: Any) -> str:
    if isinstance(node, dict):
        if isinstance(node.get("text"), str):
            return str(node["text"])
        return "".join(_rich_text(child) for child in node.get("elements") or [])
    return ""
