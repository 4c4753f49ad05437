"""`ragbot ask`: one answer streamed to the terminal, with its sources and, on request, each stage's figures."""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Sequence
from typing import Protocol, TextIO

from bot.answer import Answerer
from bot.services import Services
from bot.turns import TurnRecorder, apology, shown_sources
from rag.fallback import format_sources
from rag.pipeline import TurnContext

log = logging.getLogger(__name__)

CLI_PLATFORM = "cli"


class TurnAnswerer(Protocol):
    """What runs a turn's pipeline (met by bot.answer.Answerer)."""

    async def run(
        self, question: str, kb_ids: Sequence[str], *, conversation_id: str, document_ids: Sequence[str] = ()
    ) -> TurnContext:
        """The turn with its answer stream, history loaded from the conversation."""
        ...


def print_stages(turn: TurnContext, out: TextIO) -> None:
    """One line per stage: name, milliseconds, items in and out, note; then the query searched, if rewritten."""
    for report in turn.reports:
        out.write(
            f"  {report.name:<24} {report.ms:8.1f} ms  {report.items_in:>4} -> {report.items_out:<4} {report.note}\n"
        )
    if turn.rewritten and turn.rewritten != turn.query:
        out.write(f"  searched as: {turn.rewritten}\n")


def print_sources(turn: TurnContext, out: TextIO) -> None:
    """The numbered sources the answer showed, if any."""
    sources = format_sources(shown_sources(turn))
    if sources:
        out.write("\nSources:\n" + "".join(f"  {line}\n" for line in sources))


async def new_conversation(services: Services) -> str:
    """A fresh terminal conversation's id (each `ask`, and each `chat` until /new, is one)."""
    conversation = await services.conversations.resolve(CLI_PLATFORM, "", str(uuid.uuid4()))
    return conversation.id


async def answer_turn(
    answerer: TurnAnswerer,
    recorder: TurnRecorder,
    conversation_id: str,
    question: str,
    kb_ids: Sequence[str],
    out: TextIO,
    document_ids: Sequence[str] = (),
) -> TurnContext | None:
    """One turn at the terminal: the question stored, the answer streamed to `out` and stored.

    This is the terminal's turn boundary: whatever breaks, the person gets a short apology, the turn is stored
    as failed with the error, and None is returned.
    """
    opened = await recorder.begin(conversation_id, question)
    turn: TurnContext | None = None
    shown: list[str] = []
    try:
        turn = await answerer.run(question, kb_ids, conversation_id=conversation_id, document_ids=document_ids)
        if turn.answer is not None:
            async for text in turn.answer:
                shown.append(text)
                out.write(text)
                out.flush()
    except Exception as exc:
        log.exception("turn=failed conversation=%s request=%s", conversation_id, opened.request_id)
        await recorder.fail(opened, exc, turn=turn, answer="".join(shown))
        out.write(("\n" if shown else "") + apology(exc) + "\n")
        out.flush()
        return None
    out.write("\n")
    await recorder.finish(opened, turn, "".join(shown))
    return turn


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
    conversation_id = await new_conversation(services)
    recorder = TurnRecorder(services.conversations)
    answerer = Answerer.over(services)
    turn = await answer_turn(answerer, recorder, conversation_id, question, kb_ids, out, document_ids)
    if turn is None:
        return 1
    print_sources(turn, out)
    if show_stages:
        print_stages(turn, sys.stderr)
    return 0 if turn.outcome not in ("refused", "no_match") else 1
