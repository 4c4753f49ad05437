"""The default structure-following splitter: sections, heading paths, pages, tables by rows, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiktoken

from rag.ingest.split.separators import token_length
from rag.ingest.split.structure import HEADING_PATH, TABLE_HEADER, indexed_text, split_structure
from rag.ingest.types import TextChunk

HANDBOOK = """# Employee Handbook

How we work.

## Vacation

Full-time employees get 25 days of paid vacation per year.

## Expenses

Submit expenses within 30 days, with a photo of the receipt.

## VPN

The company VPN is required outside the office.
"""


@pytest.fixture(scope="module")
def encoding(tiktoken_dir: Path | None) -> tiktoken.Encoding:
    """cl100k_base; `make` exports TIKTOKEN_CACHE_DIR (tiktoken_dir checks it exists)."""
    return tiktoken.get_encoding("cl100k_base")


def texts(chunks: list[TextChunk]) -> list[str]:
    return [chunk.text for chunk in chunks]


def paths(chunks: list[TextChunk]) -> list[list[str]]:
    return [chunk.metadata.get(HEADING_PATH, []) for chunk in chunks]


def assert_spans(text: str, chunks: list[TextChunk]) -> None:
    assert [chunk.position for chunk in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert chunk.text
        assert text[chunk.start : chunk.end] == chunk.text


def test_each_section_of_a_small_document_is_its_own_chunk() -> None:
    # The whole handbook is far under max_size: it used to be one chunk that no short question could match.
    chunks = split_structure(HANDBOOK, max_size=500, overlap=50)
    assert texts(chunks) == [
        "# Employee Handbook\n\nHow we work.",
        "## Vacation\n\nFull-time employees get 25 days of paid vacation per year.",
        "## Expenses\n\nSubmit expenses within 30 days, with a photo of the receipt.",
        "## VPN\n\nThe company VPN is required outside the office.",
    ]
    assert paths(chunks) == [
        ["Employee Handbook"],
        ["Employee Handbook", "Vacation"],
        ["Employee Handbook", "Expenses"],
        ["Employee Handbook", "VPN"],
    ]
    assert_spans(HANDBOOK, chunks)


def test_a_chunk_is_indexed_with_its_heading_path_on_its_own_first_line() -> None:
    vpn = split_structure(HANDBOOK, max_size=500, overlap=50)[3]
    # The heading is context on a line of its own, never glued to the first sentence ("VPN The company VPN is").
    assert indexed_text(vpn.text, vpn.metadata) == (
        "Employee Handbook > VPN\nThe company VPN is required outside the office."
    )


def test_text_without_headings_or_tables_is_indexed_as_it_is() -> None:
    assert indexed_text("Plain text.", {}) == "Plain text."
    assert indexed_text("Page text.", {"page": 3}) == "Page text."


def test_text_before_the_first_heading_has_no_path() -> None:
    text = "A preface.\n\n# Guide\n\nBody."
    chunks = split_structure(text, max_size=500, overlap=0)
    assert texts(chunks) == ["A preface.", "# Guide\n\nBody."]
    assert paths(chunks) == [[], ["Guide"]]
    assert HEADING_PATH not in chunks[0].metadata


def test_nested_headings_give_the_full_path_and_a_shallower_heading_pops_it() -> None:
    text = "# Install\n\nIntro.\n\n## Linux\n\nApt.\n\n### Debian\n\nDeb.\n\n## Mac\n\nBrew.\n\n# Use\n\nRun it."
    chunks = split_structure(text, max_size=500, overlap=0)
    assert paths(chunks) == [
        ["Install"],
        ["Install", "Linux"],
        ["Install", "Linux", "Debian"],
        ["Install", "Mac"],
        ["Use"],
    ]
    assert_spans(text, chunks)


@pytest.mark.parametrize(
    ("text", "expected_texts", "expected_paths"),
    [
        # An empty parent heading: its title carries into the path of the section nested in it.
        ("# Guide\n## Setup\n\nRun setup.", ["## Setup\n\nRun setup."], [["Guide", "Setup"]]),
        # An empty sibling heading: dropped, its title in no path.
        ("## Old\n## New\n\nNew text.", ["## New\n\nNew text."], [["New"]]),
        # An empty heading at the end: nothing follows it, so it is dropped.
        ("# Guide\n\nText.\n\n## Todo\n", ["# Guide\n\nText."], [["Guide"]]),
    ],
    ids=["parent", "sibling", "last"],
)
def test_a_heading_with_no_text_under_it_is_no_chunk(
    text: str, expected_texts: list[str], expected_paths: list[list[str]]
) -> None:
    chunks = split_structure(text, max_size=500, overlap=0)
    assert texts(chunks) == expected_texts
    assert paths(chunks) == expected_paths


def test_a_document_of_headings_only_is_kept_as_plain_text() -> None:
    text = "# Roadmap\n## Q1\n## Q2\n### Hiring"
    chunks = split_structure(text, max_size=500, overlap=0)
    assert texts(chunks) == [text]
    assert paths(chunks) == [[]]


def test_headings_inside_code_fences_are_code() -> None:
    text = "# Setup\n\n```sh\n# install it\npip install ragbot\n```\n\nDone."
    chunks = split_structure(text, max_size=500, overlap=0)
    assert texts(chunks) == [text]
    assert paths(chunks) == [["Setup"]]


def test_chinese_markdown_sections_and_paths() -> None:
    text = (
        "# 员工手册\n\n公司的规章制度。\n\n## 报销\n\n请在三十天内提交报销单，并附上发票照片。"
        "\n\n## 年假\n\n每年二十五天带薪年假。"
    )
    chunks = split_structure(text, max_size=500, overlap=0)
    assert texts(chunks) == [
        "# 员工手册\n\n公司的规章制度。",
        "## 报销\n\n请在三十天内提交报销单，并附上发票照片。",
        "## 年假\n\n每年二十五天带薪年假。",
    ]
    assert paths(chunks) == [["员工手册"], ["员工手册", "报销"], ["员工手册", "年假"]]
    assert (
        indexed_text(chunks[1].text, chunks[1].metadata) == "员工手册 > 报销\n请在三十天内提交报销单，并附上发票照片。"
    )


def test_a_long_chinese_section_is_cut_at_sentence_ends_with_its_path(encoding: tiktoken.Encoding) -> None:
    body = "请在三十天内提交报销单。" * 60
    text = f"# 手册\n\n## 报销\n\n{body}"
    length = token_length(encoding)
    chunks = split_structure(text, max_size=100, overlap=10, length=length)
    assert len(chunks) > 3
    assert all(length(chunk.text) <= 100 for chunk in chunks)
    assert all(chunk.text.endswith("。") for chunk in chunks)
    assert all(path == ["手册", "报销"] for path in paths(chunks))
    assert_spans(text, chunks)


def test_a_long_section_is_cut_recursively_and_only_its_first_chunk_holds_the_heading() -> None:
    paragraph = "Receipts go to finance. " * 10
    text = f"## Expenses\n\n{paragraph.strip()}\n\n{paragraph.strip()}"
    chunks = split_structure(text, max_size=260, overlap=0)
    assert len(chunks) == 2
    assert chunks[0].text.startswith("## Expenses\n\nReceipts")
    assert chunks[1].text.startswith("Receipts")
    assert paths(chunks) == [["Expenses"], ["Expenses"]]
    assert indexed_text(chunks[1].text, chunks[1].metadata).startswith("Expenses\nReceipts")


def test_a_heading_line_is_never_a_chunk_of_its_own() -> None:
    # The section's first paragraph alone is over max_size: the heading line would be left as a bare chunk.
    text = "## Expenses\n\n" + "word " * 30
    chunks = split_structure(text, max_size=60, overlap=0)
    assert chunks
    assert not any(chunk.text.startswith("##") and "\n" not in chunk.text for chunk in chunks)
    assert all(path == ["Expenses"] for path in paths(chunks))


def test_one_enormous_paragraph_without_headings_is_cut_within_max_size(encoding: tiktoken.Encoding) -> None:
    text = " ".join(f"Sentence number {n} says something about the policy." for n in range(3000))
    length = token_length(encoding)
    chunks = split_structure(text, max_size=500, overlap=50, length=length)
    assert len(chunks) > 50
    assert all(length(chunk.text) <= 500 for chunk in chunks)
    assert all(HEADING_PATH not in chunk.metadata for chunk in chunks)
    assert_spans(text, chunks)


def test_a_chunk_never_spans_two_pages() -> None:
    first, second = "Page one ends mid", "sentence on page two."
    text = f"{first}\n\n{second}"
    chunks = split_structure(text, max_size=500, overlap=0, boundaries=(0, len(first) + 2))
    assert texts(chunks) == [first, second]


def test_a_section_across_a_page_break_keeps_its_path_on_the_next_page() -> None:
    page_one = "# Report\n\n## Results\n\nThe first half."
    text = f"{page_one}\n\nThe second half."
    chunks = split_structure(text, max_size=500, overlap=0, boundaries=(0, len(page_one) + 2))
    assert texts(chunks) == ["## Results\n\nThe first half.", "The second half."]
    assert paths(chunks) == [["Report", "Results"], ["Report", "Results"]]


def _markdown_table(rows: int) -> str:
    lines = ["| Item | Limit | Approver |", "| --- | ---: | --- |"]
    lines += [f"| item {n} | {n * 10} EUR | manager {n % 7} |" for n in range(rows)]
    return "\n".join(lines)


def test_a_small_table_stays_whole_with_its_section() -> None:
    text = "## Limits\n\nWhat you may spend:\n\n" + _markdown_table(3)
    chunks = split_structure(text, max_size=500, overlap=50)
    assert texts(chunks) == [text]


def test_a_long_markdown_table_is_cut_between_rows_and_every_later_chunk_names_its_header(
    encoding: tiktoken.Encoding,
) -> None:
    table = _markdown_table(200)
    text = f"## Limits\n\nWhat you may spend.\n\n{table}\n\nAsk finance otherwise."
    length = token_length(encoding)
    chunks = split_structure(text, max_size=120, overlap=20, length=length)
    header = "| Item | Limit | Approver |\n| --- | ---: | --- |"
    rows = [chunk for chunk in chunks if "| item" in chunk.text]
    assert rows[0].text.startswith(header)
    assert TABLE_HEADER not in rows[0].metadata
    for chunk in rows[1:]:
        assert chunk.metadata[TABLE_HEADER] == header
        lines = chunk.text.split("\n")
        assert all(line.startswith("| item") and line.endswith("|") for line in lines)  # whole rows, as rows
        assert length(header + "\n" + chunk.text) <= 120
    # No row is lost or repeated: the overlap does not apply between a table's rows.
    found = [line for chunk in rows for line in chunk.text.split("\n") if line.startswith("| item")]
    assert found == table.split("\n")[2:]
    assert texts(chunks)[0] == "## Limits\n\nWhat you may spend."
    assert texts(chunks)[-1] == "Ask finance otherwise."
    later = rows[1]
    assert indexed_text(later.text, later.metadata) == f"Limits\n{header}\n{later.text}"
    assert_spans(text, chunks)


def test_a_table_of_two_thousand_rows_becomes_chunks_of_rows(encoding: tiktoken.Encoding) -> None:
    # As the HTML and Word extractors write a table: one ' | ' line per row, the first row the header.
    lines = ["Name | Team | Phone"] + [f"Person {n} | Team {n % 13} | +49 30 {n:06d}" for n in range(2000)]
    text = "\n".join(lines)
    length = token_length(encoding)
    chunks = split_structure(text, max_size=500, overlap=50, length=length)
    assert 30 < len(chunks) < 200
    assert all(chunk.metadata.get(TABLE_HEADER) == "Name | Team | Phone" for chunk in chunks[1:])
    assert [line for chunk in chunks for line in chunk.text.split("\n")] == lines
    assert all(length(indexed_text(chunk.text, chunk.metadata)) <= 500 for chunk in chunks)


def test_rows_that_name_their_columns_repeat_no_header() -> None:
    # CSV and spreadsheet rows as the tabular extractor writes them: every cell says its column.
    lines = [f"name: Person {n} | team: Ops | phone: {n:05d}" for n in range(100)]
    text = "\n".join(lines)
    chunks = split_structure(text, max_size=300, overlap=30)
    assert len(chunks) > 5
    assert all(TABLE_HEADER not in chunk.metadata for chunk in chunks)
    assert [line for chunk in chunks for line in chunk.text.split("\n")] == lines


def test_pipes_inside_a_code_fence_are_no_table() -> None:
    code = "```sh\n" + "\n".join(f"cat log{n} | grep error | wc -l" for n in range(40)) + "\n```"
    chunks = split_structure(f"## Logs\n\n{code}", max_size=300, overlap=0)
    assert all(TABLE_HEADER not in chunk.metadata for chunk in chunks)


def test_sizes_are_checked() -> None:
    with pytest.raises(ValueError, match="overlap"):
        split_structure("text", max_size=10, overlap=10)


def test_blank_text_gives_no_chunks() -> None:
    assert split_structure(" \n\n ", max_size=10, overlap=0) == []
