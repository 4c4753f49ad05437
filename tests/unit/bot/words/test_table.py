"""A query's result drawn in monospace, and as each platform shows it under an answer."""

from __future__ import annotations

from adapters.slack.render import trailing_blocks
from adapters.telegram.render import to_telegram_html
from bot.types import Answer, SourceLink
from bot.words.messages import answer_with_sources, format_sources
from bot.words.table import monospace_table

ROWS = (("region", "总计"), ("north", "250000"), ("南方", "12"))


def test_columns_line_up_counting_wide_characters_twice() -> None:
    assert monospace_table(ROWS).splitlines() == [
        "region | 总计",
        "-------+-------",
        "north  | 250000",
        "南方   | 12",
    ]


def test_the_sources_show_a_result_as_a_code_block_and_slack_as_a_monospace_section() -> None:
    source = SourceLink(1, "prices.csv", table=ROWS)
    assert "```\n[1]\nregion | 总计\n" in format_sources([source])
    blocks = trailing_blocks(Answer("Two regions [1].", (source,)))
    sections = [block for block in blocks if block["type"] == "section"]
    assert sections == [{"type": "section", "text": {"type": "mrkdwn", "text": f"[1]\n```{monospace_table(ROWS)}```"}}]


def test_a_long_result_is_cut_to_whole_lines_within_a_slack_section() -> None:
    rows = (("n",), *((str(10**30 + i),) for i in range(500)))
    (section,) = [b for b in trailing_blocks(Answer("x", (SourceLink(1, "t", table=rows),))) if b["type"] == "section"]
    text = section["text"]["text"]
    assert len(text) <= 3_000
    assert text.endswith("```")


def test_telegram_shows_a_result_in_a_pre_block_that_a_backquote_in_a_cell_cannot_close() -> None:
    rows = (("code", "n"), ("a```b", "3"), ("<x>", "4"))
    html = to_telegram_html(answer_with_sources(Answer("Three codes [1].", (SourceLink(1, "codes.csv", table=rows),))))
    pre = html[html.index("<pre>") : html.index("</pre>") + len("</pre>")]
    assert pre == "<pre>[1]\ncode  | n\n------+--\na'''b | 3\n&lt;x&gt;   | 4</pre>"
