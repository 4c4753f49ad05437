"""The team set (eval/team) is sound: its facts are quoted from its sources, and build.py makes its binary files."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from rag.eval.conversation_eval import load_conversations, normalised
from rag.ingest.extract import extract
from rag.ingest.faq_sheet import is_faq_sheet, parse_faq_file

TEAM = Path(__file__).resolve().parents[4] / "eval" / "team"
DOCUMENTS = TEAM / "documents"


def _text(path: Path) -> str:
    data = path.read_bytes()
    if is_faq_sheet(data, path.name):
        return "\n".join(f"{e.question}\n" + "\n".join(e.answers) for e in parse_faq_file(data, path.name))
    return "\n".join(section.text for section in extract(data, filename=path.name).sections)


def _build_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("team_build", TEAM / "build.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_fact_is_quoted_from_one_of_the_sources_its_turn_names() -> None:
    texts = {path.name: normalised(_text(path)) for path in DOCUMENTS.iterdir()}
    unquoted = [
        (turn.question, fact)
        for conversation in load_conversations(TEAM / "conversations.jsonl")
        for turn in conversation.turns
        for fact in turn.facts
        if not any(normalised(fact) in texts[source] for source in turn.sources)
    ]
    assert unquoted == []


def test_the_set_has_every_kind_of_turn_and_names_only_its_own_files() -> None:
    turns = [turn for c in load_conversations(TEAM / "conversations.jsonl") for turn in c.turns]
    assert 40 <= len(turns) <= 60
    assert {turn.expect for turn in turns} == {"answer", "decline", "smalltalk"}
    named = {source for turn in turns for source in turn.sources}
    assert named == {path.name for path in DOCUMENTS.iterdir()}


@pytest.mark.parametrize(
    ("name", "builder"), [("benefits.docx", "benefits_docx"), ("security-policy.pdf", "security_pdf")]
)
def test_build_py_makes_the_committed_binary_documents(name: str, builder: str) -> None:
    assert getattr(_build_module(), builder)() == (DOCUMENTS / name).read_bytes()
