"""`ragbot ask`: one answer streamed to the terminal, with its sources and, on request, each stage's figures."""

from __future__ import annotations

import sys
from typing import TextIO

from bot.answer import Answerer
from bot.services import Services
from rag.fallback import format_sources
from rag.pipeline import TurnContext


def print_stages(turn: TurnContext, out: TextIO) -> None:
    """One line per stage: name, milliseconds, items in and out, note."""
    for report in turn.reports:
        out.write(
            f"  {report.name:<24} {report.ms:8.1f} ms  {report.items_in:>4} -> {report.items_out:<4} {report.note}\n"
        )


async def run_ask(
    services: Services, question: str, kb_names: list[str], *, show_stages: bool = False, out: TextIO = sys.stdout
) -> int:
    """Answer `question` from the named knowledge bases; 0 when answered, 1 when refused or unmatched."""
    kb_ids = [(await services.knowledge.find(name)).id for name in kb_names]
    turn = await Answerer(services).run(question, kb_ids)
    if turn.answer is not None:
        async for text in turn.answer:
            out.write(text)
            out.flush()
    out.write("\n")
    sources = format_sources(turn.selected) if turn.outcome not in ("refused", "no_match") else []
    if sources:
        out.write("\nSources:\n" + "".join(f"  {line}\n" for line in sources))
    if show_stages:
        print_stages(turn, sys.stderr)
    return 0 if turn.outcome not in ("refused", "no_match") else 1
