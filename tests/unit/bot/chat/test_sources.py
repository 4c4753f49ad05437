"""A source's snippet as a person reads it under an answer: plain text, and the sentence the answer quoted."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from bot.chat.recorder import source_entry
from bot.chat.sources import SourceBook, snippet
from rag.faq.candidate import faq_candidate
from rag.types import Candidate
from storage.records import ChunkRecord, FaqRecord, MessageRecord

OPENING = (
    "Formats: the printer takes A4 and Letter paper. See the manual. Toner cartridges are kept in the blue cabinet "
    "next to the lifts. Ask reception for the key."
)
GUIDE = (
    "# Formats\n\n"
    "**Formats**: the printer takes *A4* and `Letter` paper. See [the manual](https://example.org/manual).\n\n"
    "## Toner\n\n"
    "- Toner cartridges are kept in the __blue__ cabinet next to the lifts.\n"
    "- Ask reception for the key.\n"
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (GUIDE, OPENING),
        ("# Lunch\n\nLunch is served from noon.", "Lunch is served from noon."),
        ("> Quoted **advice** with ~~no~~ marks\n> on two lines.", "Quoted advice with no marks on two lines."),
        ("| Day | Opens |\n|---|---|\n| Monday | 9:00 |", "Day · Opens Monday · 9:00"),
        (
            "![diagram](x.png) shows the flow, see <https://example.org/flow>.",
            "diagram shows the flow, see https://example.org/flow.",
        ),
        ("snake_case_names and 2 * 3 * 4 stay as written", "snake_case_names and 2 * 3 * 4 stay as written"),
        ("## 退货\n\n**退货**请在七天内办理。", "退货请在七天内办理。"),
        ("# Only a heading", "Only a heading"),
        ("Before the break.\n\n---\n\n```python\nprint(1)\n```", "Before the break. print(1)"),
    ],
)
def test_a_snippet_is_plain_text_without_markdown_marks_or_a_leading_heading(text: str, shown: str) -> None:
    assert snippet(text) == shown


@pytest.mark.parametrize(
    ("answer", "number", "shown"),
    [
        # The answer quoted the second bullet's sentence, citing this source.
        (
            "Toner cartridges are kept in the blue cabinet next to the lifts [1].",
            1,
            "Toner cartridges are kept in the blue cabinet next to the lifts.",
        ),
        # An extractive answer quotes sentences verbatim, each run followed by its source's number.
        (
            "> Ask reception for the key. [2]\n\n"
            "> Toner cartridges are kept in the blue cabinet next to the lifts. [1]",
            2,
            "Ask reception for the key.",
        ),
        # A paraphrase close enough to one sentence still finds it.
        (
            "The toner cartridges are in the blue cabinet by the lifts [1].",
            1,
            "Toner cartridges are kept in the blue cabinet next to the lifts.",
        ),
        # An answer that quotes nothing of this source: its opening, in plain text.
        ("The canteen opens at noon [2].", 1, OPENING),
        ("", 1, OPENING),
    ],
)
def test_a_snippet_is_the_sentence_the_answer_quoted_from_that_source(answer: str, number: int, shown: str) -> None:
    assert snippet(GUIDE, answer, number) == shown


def test_a_long_snippet_is_cut_on_a_word() -> None:
    shown = snippet("word " * 100)
    assert shown.endswith("…")
    assert len(shown) <= 240
    assert "  " not in shown


class _NoDocuments:
    async def source_uris(self, document_ids: Sequence[str]) -> dict[str, str]:
        return {}

    async def chunks_with_titles(self, chunk_ids: Sequence[str]) -> list[tuple[ChunkRecord, str]]:
        return []


class _NoFaqs:
    async def by_ids(self, faq_ids: Sequence[str]) -> list[FaqRecord]:
        return []


async def test_a_passage_shows_the_page_it_starts_on_as_it_is_answered_and_when_read_back_from_its_answer() -> None:
    text = "Receipts are due within 30 days."
    passage = Candidate("c1", "chunk", "kb", text, 0.9, document_id="d1", metadata={"page": 4, "title": "scan.pdf"})
    book = SourceBook(_NoDocuments(), _NoFaqs())
    [live] = await book.of_turn([passage], f"{text} [1]")
    assert (live.title, live.page) == ("scan.pdf", 4)
    meta = {"sources": [source_entry(passage)]}
    stored = MessageRecord("a1", "conv", "r1", "assistant", f"{text} [1]", "done", "", meta, datetime.now(UTC))
    [read_back] = (await book.of_answers([stored]))["a1"]
    assert (read_back.title, read_back.page) == ("scan.pdf", 4)


async def test_an_faq_source_is_titled_by_its_question_and_shows_its_answer_without_english_labels() -> None:
    faq = faq_candidate(
        FaqRecord("f1", "kb", "每年有几天年假？", (), (), ("入职满一年的员工每年享有15天带薪假期。",), True, "h"),
        score=0.9,
        legs=frozenset({"faq"}),
    )
    [link] = await SourceBook(_NoDocuments(), _NoFaqs()).of_turn([faq], "> 入职满一年的员工每年享有15天带薪假期。 [1]")
    assert (link.title, link.snippet) == ("每年有几天年假？", "入职满一年的员工每年享有15天带薪假期。")
