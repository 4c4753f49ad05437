"""From extracted sections to chunks under a knowledge base's rule: the structure default and the chosen modes."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiktoken

from rag.ingest.parent_child import build_chunks, clean_document
from rag.ingest.rules import parse_rule
from rag.ingest.split.structure import HEADING_PATH
from rag.ingest.types import ExtractedDocument, Section

HANDBOOK = (
    "# Handbook\n\nHow we work.\n\n## Vacation\n\n25 days a year.\n\n## Expenses\n\nWithin 30 days, with receipts."
)


@pytest.fixture(scope="module")
def encoding(tiktoken_dir: Path | None) -> tiktoken.Encoding:
    """cl100k_base; `make` exports TIKTOKEN_CACHE_DIR (tiktoken_dir checks it exists)."""
    return tiktoken.get_encoding("cl100k_base")


def test_the_default_rule_gives_a_small_handbook_a_chunk_per_section(encoding: tiktoken.Encoding) -> None:
    parents = build_chunks(HANDBOOK, parse_rule({}), encoding)
    assert [parent.chunk.metadata[HEADING_PATH] for parent in parents] == [
        ["Handbook"],
        ["Handbook", "Vacation"],
        ["Handbook", "Expenses"],
    ]
    assert all(parent.children == () for parent in parents)


@pytest.mark.parametrize("mode", ["recursive", "fixed", "token"])
def test_a_chosen_splitter_still_cuts_the_document_as_one_stretch(encoding: tiktoken.Encoding, mode: str) -> None:
    parents = build_chunks(HANDBOOK, parse_rule({"segment": {"mode": mode}}), encoding)
    assert [parent.chunk.text for parent in parents] == [HANDBOOK]


def test_parent_child_children_inherit_their_parents_heading_path(encoding: tiktoken.Encoding) -> None:
    body = " ".join(f"Expense rule {n} applies to every trip." for n in range(40))
    text = f"# Handbook\n\n## Expenses\n\n{body}"
    rule = parse_rule({"mode": "parent_child", "segment": {"mode": "structure"}, "child": {"max_tokens": 60}})
    parents = build_chunks(text, rule, encoding)
    children = [child for parent in parents for child in parent.children]
    assert len(children) > 3
    assert all(child.metadata[HEADING_PATH] == ["Handbook", "Expenses"] for child in children)
    assert all(text[child.start : child.end] == child.text for child in children)


def test_a_short_pdf_gives_a_chunk_per_page_each_with_its_page(encoding: tiktoken.Encoding) -> None:
    pages = ("Results continue", "on the second page.", "Appendix.")
    document = ExtractedDocument(
        tuple(Section(text, {"page": n}) for n, text in enumerate(pages, 1)), mime_type="application/pdf"
    )
    rule = parse_rule({})
    cleaned = clean_document(document, rule)
    parents = build_chunks(cleaned.text, rule, encoding, cleaned.section_starts)
    assert [(p.chunk.text, cleaned.metadata_at(p.chunk.start)["page"]) for p in parents] == [
        ("Results continue", 1),
        ("on the second page.", 2),
        ("Appendix.", 3),
    ]
    # The chosen recursive rule still reads the pages as one stretch, as before.
    recursive = parse_rule({"segment": {"mode": "recursive"}})
    assert len(build_chunks(cleaned.text, recursive, encoding, cleaned.section_starts)) == 1
