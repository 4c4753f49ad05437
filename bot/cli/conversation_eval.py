"""`ragbot eval` on a conversation set: its documents ingested as `ragbot ingest` does, its conversations chatted
turn by turn through the conversation manager as `ragbot chat` does, each turn judged."""

from __future__ import annotations

import io
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Final, TextIO

from bot.app.services import Services
from bot.chat.manager import ConversationManager, TurnResult
from bot.chat.recorder import shown_sources
from bot.cli.ask import answer_turn, cli_manager, new_conversation_key
from bot.cli.knowledge import run_ingest
from rag.eval.conversation_eval import Conversation, PlayedTurn, Verdict, judge, load_conversations, score_table
from rag.ingest.faq_sheet import is_faq_sheet, parse_faq_file, question_key

CONVERSATIONS: Final = "conversations.jsonl"
"""The file that makes a folder a conversation set; its documents and FAQ sheets are in `DOCUMENTS` beside it."""

DOCUMENTS: Final = "documents"


async def evaluate_conversations(services: Services, folder: Path, out: TextIO) -> int:
    """Ingest the set's documents into a throw-away knowledge base, chat every conversation, print the table;
    1 when a document failed to ingest (the figures would not be about the set)."""
    conversations = load_conversations(folder / CONVERSATIONS)
    kb = await services.knowledge.create(f"eval-{folder.name}-{uuid.uuid4().hex[:8]}")
    try:
        report = io.StringIO()
        failed = await run_ingest(services, kb.name, [str(folder / DOCUMENTS)], out=report)
        # One line per file and the summary; the progress lines in between are for a person watching.
        out.writelines(line + "\n" for line in report.getvalue().splitlines() if not line.startswith("["))
        if failed:
            return 1
        names = await _file_names(services, kb.id, folder / DOCUMENTS)
        manager = cli_manager(services)
        verdicts: list[Verdict] = []
        for conversation in conversations:
            verdicts += await _play(manager, conversation, kb.id, names)
        out.write("\n" + score_table(folder.name, verdicts) + "\n")
        return 0
    finally:
        await services.knowledge.delete(kb.name)


async def _play(
    manager: ConversationManager, conversation: Conversation, kb_id: str, names: Mapping[str, str]
) -> list[Verdict]:
    """Each turn of one conversation asked in one new terminal chat, so the earlier turns are its stored history."""
    key = new_conversation_key()
    verdicts = []
    for number, turn in enumerate(conversation.turns, start=1):
        result = await answer_turn(manager, key, turn.question, [kb_id], io.StringIO())
        verdicts.append(judge(conversation.name, number, turn, _played(result, names)))
    return verdicts


def _played(result: TurnResult | None, names: Mapping[str, str]) -> PlayedTurn:
    if result is None:
        return PlayedTurn(answer="", outcome="failed")
    turn = result.turn
    cited = [] if turn is None else [names.get(c.document_id or c.id, c.id) for c in shown_sources(turn)]
    return PlayedTurn(
        answer=result.answer.text,
        outcome=result.answer.outcome,
        rewritten=turn.rewritten if turn is not None else "",
        cited=tuple(dict.fromkeys(cited)),
    )


async def _file_names(services: Services, kb_id: str, documents: Path) -> dict[str, str]:
    """The file each source came from, by document id (a document's chunks) or FAQ id (an FAQ sheet's rows)."""
    names = {document.id: Path(document.source_uri).name for document in await services.documents.in_kb(kb_id)}
    sheets = _sheet_questions(documents)
    for faq in await services.faqs.in_kb(kb_id):
        names[faq.id] = sheets.get(question_key(faq.question), "FAQ")
    return names


def _sheet_questions(documents: Path) -> dict[str, str]:
    """The questions (as keys) of each FAQ sheet in the folder -> the sheet's file name."""
    questions: dict[str, str] = {}
    for path in sorted(documents.rglob("*")):
        if path.is_file() and is_faq_sheet(data := path.read_bytes(), path.name):
            for entry in parse_faq_file(data, path.name):
                questions.setdefault(question_key(entry.question), path.name)
    return questions
