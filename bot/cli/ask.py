"""`ragbot ask`: one answer streamed to the terminal, with its sources and, on request, each stage's figures."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Sequence
from typing import TextIO

from bot.app.manager import build_manager
from bot.app.services import Services
from bot.chat.limits import RateLimit
from bot.chat.manager import ChatPolicy, ConversationManager, TurnResult
from bot.cli.reindex import note_outdated_index
from bot.cli.terminal import TerminalTarget
from bot.types import ConversationKey, IncomingMessage, UserRef
from bot.words import messages
from rag.pipeline import TurnContext

CLI_PLATFORM = "cli"
CLI_USER = UserRef("terminal")


def print_stages(turn: TurnContext, out: TextIO) -> None:
    """One line per stage: name, milliseconds, items in and out, note; then the query searched, if rewritten."""
    for report in turn.reports:
        out.write(
            f"  {report.name:<24} {report.ms:8.1f} ms  {report.items_in:>4} -> {report.items_out:<4} {report.note}\n"
        )
    if turn.rewritten and turn.rewritten != turn.query:
        out.write(f"  searched as: {turn.rewritten}\n")


def print_sources(result: TurnResult, out: TextIO) -> None:
    """The numbered sources the answer showed, if any."""
    if result.answer.sources:
        lang = result.answer.language
        lines = "".join(
            f"  [{source.number}] {messages.source_title(source, lang)}\n" for source in result.answer.sources
        )
        out.write(f"\n{messages.CLI_SOURCES_HEADING}\n" + lines)


def cli_manager(services: Services) -> ConversationManager:
    """The conversation manager as the terminal uses it: the person at the terminal is an admin, no rate limit."""
    policy = ChatPolicy(
        admins={CLI_PLATFORM: frozenset({CLI_USER.id})}, rate_limit=RateLimit(count=1_000_000), max_turns=1
    )
    return build_manager(services, policy)


def new_conversation_key() -> ConversationKey:
    """A fresh terminal conversation (each `ask`, and each `chat` until /new, is one)."""
    return ConversationKey(CLI_PLATFORM, "", str(uuid.uuid4()))


async def answer_turn(
    manager: ConversationManager,
    key: ConversationKey,
    question: str,
    kb_ids: Sequence[str],
    out: TextIO,
    document_ids: Sequence[str] = (),
) -> TurnResult | None:
    """One turn at the terminal through the conversation manager: the answer printed as it is written."""
    message = IncomingMessage(key=key, message_id="", user=CLI_USER, text=question)
    return await manager.handle(message, TerminalTarget(out), kb_ids=kb_ids, document_ids=document_ids)


async def run_ask(
    services: Services,
    question: str,
    kb_names: list[str],
    *,
    show_stages: bool = False,
    document_ids: Sequence[str] = (),
    out: TextIO = sys.stdout,
) -> int:
    """Answer `question` from the named knowledge bases; 0 when answered, 1 when refused, unmatched or failed."""
    kb_ids = [(await services.knowledge.find(name)).id for name in kb_names]
    note_outdated_index(services)
    result = await answer_turn(cli_manager(services), new_conversation_key(), question, kb_ids, out, document_ids)
    if result is None or result.answer.outcome == "failed":
        return 1
    print_sources(result, out)
    if show_stages and result.turn is not None:
        print_stages(result.turn, sys.stderr)
    return 0 if result.answer.outcome not in ("refused", "no_match") else 1
