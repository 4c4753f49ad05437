"""The extractive answer: sentences cut, scored against the question, quoted in order with source numbers."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.eval.answer_eval import answer_scores, answer_table, contains_answer, gold_queries, percentile
from rag.extractive import (
    ExtractiveConfig,
    Unit,
    clip,
    leans_on_previous,
    passage_units,
    plain_terms,
    score_units,
    sentence_answer,
    split_units,
)
from rag.lexical import LexicalAnalyzer
from rag.types import Candidate

LEXICAL = LexicalAnalyzer()


def chunk(n: int, text: str, **metadata: Any) -> Candidate:
    return Candidate(id=f"c{n}", kind="chunk", kb_id="kb", text=text, score=0.5, metadata=metadata)


def answer(query: str, *texts: str, max_chars: int = 400) -> str:
    passages = [chunk(n, text) for n, text in enumerate(texts, start=1)]
    return sentence_answer(query, passages, LEXICAL.tokens, ExtractiveConfig(max_chars=max_chars))


def texts(text: str) -> list[str]:
    return [unit.text for unit in split_units(text)]


def test_english_sentences_end_at_stops_but_not_inside_numbers_or_abbreviations() -> None:
    assert texts("Version 3.5 is out, e.g. on Linux. Is it fast? Yes! It said “done.” Then") == [
        "Version 3.5 is out, e.g. on Linux.",
        "Is it fast?",
        "Yes!",
        "It said “done.”",
        "Then",
    ]


def test_chinese_sentences_end_at_full_width_stops_with_their_closing_quotes() -> None:
    assert texts("每天晚上备份。保留三十天！“真的吗？”是的") == ["每天晚上备份。", "保留三十天！", "“真的吗？”", "是的"]


def test_soft_wrapped_lines_are_one_paragraph_joined_by_language() -> None:
    assert texts("Backups run\nnightly. Restores\ntake an hour.\n\n每天晚上\n备份。") == [
        "Backups run nightly.",
        "Restores take an hour.",
        "每天晚上备份。",
    ]


def test_list_items_are_units_of_their_own_under_their_heading() -> None:
    units = split_units("# Setup\nInstall it:\n- run `make`. Then wait.\n  on every host\n1. second step\n2、第三步")
    assert [unit.text for unit in units] == [
        "Install it:",
        "- run `make`. Then wait. on every host",
        "1. second step",
        "2、第三步",
    ]
    assert all(unit.starts_line for unit in units)
    assert {unit.heading for unit in units} == {"Setup"}


def test_a_fenced_code_block_is_kept_whole_with_its_blank_lines() -> None:
    code = "```bash\nragbot ingest docs/\n\n# it walks the folder. Recursively.\n```"
    units = split_units(f"Run this. {code[:0]}\n{code}\nDone.")
    assert [unit.text for unit in units] == ["Run this.", code, "Done."]
    assert [unit.code for unit in units] == [False, True, False]


def test_an_unclosed_fence_runs_to_the_end_of_the_passage() -> None:
    units = split_units("Intro.\n```\nx = 1\ny = 2")
    assert units[-1] == Unit(0, 1, "```\nx = 1\ny = 2", starts_line=True, code=True)


@pytest.mark.parametrize(
    ("text", "leans"),
    [
        ("This keeps 30 days.", True),
        ("“It is nightly.”", True),
        ("However, restores are slow.", True),
        ("它保留三十天。", True),
        ("该卫星于2006年发射。", True),
        ("Thistles grow here.", False),
        ("Backups run nightly.", False),
        ("鑫诺二号是通信卫星。", False),
    ],
)
def test_sentences_that_point_back_lean_on_the_one_before(text: str, leans: bool) -> None:
    assert leans_on_previous(Unit(0, 1, text)) is leans


def test_the_answer_is_the_sentence_that_answers_not_the_whole_passage() -> None:
    text = (
        "Supported formats are PDF, DOCX, HTML, Markdown and plain text. Scanned PDFs need OCR first. "
        "To ingest a folder, run `ragbot ingest PATH` and every supported file under it is read. "
        "Files over 50 MB are skipped with a warning."
    )
    assert answer("How do I ingest a folder?", text) == (
        "> To ingest a folder, run `ragbot ingest PATH` and every supported file under it is read. [1]"
    )


def test_a_heading_is_never_the_answer_even_when_it_shares_the_questions_words() -> None:
    text = (
        "## How a question is answered\n\n"
        "Folders are ingested recursively, hidden files skipped.\n\n"
        "## How files are read\n\nEach format has its reader."
    )
    assert answer("How do I ingest a folder?", text) == (
        "**How a question is answered**\n> Folders are ingested recursively, hidden files skipped. [1]"
    )


def test_a_sentence_that_leans_on_the_one_before_brings_it_along() -> None:
    text = "Weekly reports are due on Friday. Backups run nightly at two. This keeps thirty days of copies."
    assert answer("How many days of copies are kept?", text) == (
        "> Backups run nightly at two. This keeps thirty days of copies. [1]"
    )


def test_chosen_sentences_keep_document_order_and_cite_their_own_source() -> None:
    first = "Unused leave days are listed in the portal. The office has a canteen. Unused leave days expire in March."
    second = "Parking is free for staff."
    third = "Unused leave days can be carried over with approval."
    got = answer("When do unused leave days expire?", first, second, third)
    assert got == (
        "> Unused leave days are listed in the portal. … Unused leave days expire in March. [1]\n\n"
        "> Unused leave days can be carried over with approval. [3]"
    )


def test_chinese_questions_are_answered_with_chinese_sentences() -> None:
    text = (
        "鑫诺二号\n\n鑫诺二号通信卫星是中国空间技术研究院为鑫诺卫星通信有限公司研制的一颗广播电视直播卫星。"
        "它采用东方红四号平台。卫星于2006年10月29日发射。"
    )
    got = answer("鑫诺二号通信卫星是由谁研制的？", text)
    assert got.startswith("**鑫诺二号**\n> 鑫诺二号通信卫星是中国空间技术研究院")
    assert got.endswith(" [1]")
    assert "2006年" not in got


def test_with_no_shared_term_the_top_passage_opening_is_quoted() -> None:
    got = answer("zzz?", "Alpha is first. Beta is second.", "Gamma elsewhere.", max_chars=30)
    assert got == "> Alpha is first. [1]"


@pytest.mark.parametrize(
    "text",
    [
        "中" * 900,  # a CJK passage with no punctuation
        "unbroken " * 200,  # an English passage with no punctuation
        "e\u0301" * 500,  # every letter carries a combining accent
        "👍🏽" * 300 + "👨\u200d👩\u200d👧" * 100,  # skin tones and zero-width joiners
    ],
)
def test_a_passage_without_stops_is_cut_at_the_budget_on_a_boundary(text: str) -> None:
    got = answer("q", text, max_chars=120)
    assert len(got) <= 120
    assert got.startswith("> ")
    assert got.endswith("… [1]")
    body = got.removeprefix("> ").removesuffix("… [1]")
    assert text.startswith(body.rstrip())
    tail = text[len(body.rstrip()) :][:1]
    assert not tail or (unicodedata.category(tail) not in {"Mn", "Mc", "Me"} and tail not in "\u200d\U0001f3fd")


def test_english_is_cut_at_a_word_boundary() -> None:
    assert clip("alpha beta gamma delta", 14) == "alpha beta…"


def test_plain_terms_pair_chinese_characters_and_keep_words() -> None:
    assert plain_terms("Ingest 文件夹 now") == ["ingest", "文件", "件夹", "now"]


@given(
    passages=st.lists(st.text(alphabet="ab c.。!\n中`-", max_size=300), min_size=1, max_size=5),
    query=st.text(alphabet="ab c中", max_size=20),
    max_chars=st.integers(min_value=40, max_value=500),
)
def test_the_answer_never_exceeds_its_budget(passages: list[str], query: str, max_chars: int) -> None:
    assert len(answer(query, *passages, max_chars=max_chars)) <= max_chars


# The measurement: gold containment and length.


def test_containment_ignores_quote_marks_and_whitespace() -> None:
    assert contains_answer("> 中国空间技术\n> 研究院 [1]", ["中国空间技术研究院"])
    assert contains_answer("> New York\n> City [1]", ["York City"])
    assert contains_answer("> it is  made   by X [2]", ["nothing", "made by X"])
    assert not contains_answer("> made by Y [1]", ["made by X"])


def test_answer_scores_report_containment_and_length_percentiles() -> None:
    scores = answer_scores("s", ["ab", "abcd", "x" * 10], [["a"], ["zz"], ["x"]], [1.0, 2.0, 3.0])
    assert (scores.queries, round(scores.containment, 3), scores.median_chars, scores.p90_chars) == (3, 0.667, 4, 10)
    assert scores.median_ms == 2.0
    assert "| s | 3 | 66.7% | 4 | 10 | 2.0 |" in answer_table("set", [scores])


def test_percentile_is_nearest_rank() -> None:
    assert percentile([float(n) for n in range(1, 11)], 0.9) == 9.0
    assert percentile([], 0.9) == 0.0


def test_only_queries_with_gold_answers_are_measured() -> None:
    rows = [{"text": "q1", "answers": [" a  b ", ""]}, {"text": "q2"}, {"text": "q3", "answers": []}]
    assert [(q.text, q.answers) for q in gold_queries(rows)] == [("q1", ("a b",))]


def test_an_faq_answer_is_one_unit_quoted_whole_with_its_number() -> None:
    faq = Candidate(
        id="f",
        kind="faq",
        kb_id="kb",
        text="Q: Leave?",
        score=0.5,
        metadata={"answers": ["You get 25 days. Ask HR for more."]},
    )
    got = sentence_answer("how many days?", [chunk(1, "Parking is free."), faq], LEXICAL.tokens, ExtractiveConfig())
    assert got == "> You get 25 days. Ask HR for more. [2]"


# Issue 18: what a newcomer without a chat model saw.

HANDBOOK = (
    "## Vacation\n"
    "Full-time employees get 25 vacation days per year. Unused vacation days carry over until March 31.\n\n"
    "## Equipment\n"
    "Every new hire gets a laptop on their first day."
)


def test_only_the_sentences_that_answer_no_trailing_one_sharing_a_common_word() -> None:
    assert answer("How many vacation days do I get?", HANDBOOK) == (
        "**Vacation**\n"
        "> Full-time employees get 25 vacation days per year. Unused vacation days carry over until March 31. [1]"
    )


@pytest.mark.parametrize(
    "table",
    [
        "Benefit | Amount | Starts\n--- | --- | ---\nHealth insurance | 80% | day one\nGym | 30 EUR | after probation\n"
        "Commuter pass | 100% | day one",
        "| Benefit | Amount | Starts |\n|---|---|---|\n| Health insurance | 80% | day one |\n"
        "| Gym | 30 EUR | after probation |\n| Commuter pass | 100% | day one |",
    ],
)
def test_table_rows_are_quoted_as_rows_under_their_header(table: str) -> None:
    assert answer("Which benefits start on day one?", f"Benefits\n\n{table}") == (
        "**Benefits**\n"
        "> | Benefit | Amount | Starts |\n"
        "> | --- | --- | --- |\n"
        "> | Health insurance | 80% | day one |\n"
        "> | Commuter pass | 100% | day one |\n"
        "> \n"
        "> [1]"
    )


@pytest.mark.parametrize("heading", ["VPN", "## VPN", "Handbook > IT > VPN"])
def test_a_heading_is_context_above_the_quote_never_glued_into_a_sentence(heading: str) -> None:
    text = f"{heading}\nThe company VPN is required for internal sites from home. Laptops are replaced every 3 years."
    got = answer("Is the VPN required at home?", text)
    shown = heading.removeprefix("## ")
    assert got == f"**{shown}**\n> The company VPN is required for internal sites from home. [1]"


def test_a_how_to_question_is_answered_by_the_instruction() -> None:
    text = (
        "## VPN\nThe company VPN is required for internal sites from home. "
        "To set it up, open the VPN app and sign in with your company account."
    )
    assert answer("how do I set up the VPN", text) == (
        "**VPN**\n> To set it up, open the VPN app and sign in with your company account. [1]"
    )


def test_a_heading_path_in_metadata_is_the_context_of_the_chunk() -> None:
    passage = chunk(1, "To set it up, open the VPN app.", heading_path=["Handbook", "VPN"])
    got = sentence_answer("how do I set up the VPN", [passage], LEXICAL.tokens, ExtractiveConfig())
    assert got == "**Handbook > VPN**\n> To set it up, open the VPN app. [1]"


def test_function_words_carry_no_match() -> None:
    row = "| 如何申请退货？ | 在“我的订单”中选择商品。 | 退货流程是什么 | 是 |"
    units = passage_units([chunk(1, row)])
    assert score_units("公司的年假政策是什么？", units, LEXICAL.tokens, ExtractiveConfig()) == [0.0]
    assert score_units(
        "What is it?", passage_units([chunk(1, "What is this? It is a cat.")]), LEXICAL.tokens, ExtractiveConfig()
    ) == [0.0, 0.0]


def test_an_faq_answer_is_matched_with_its_question_and_shown_under_it() -> None:
    days = faq_candidate("每年有几天年假？", "入职满一年的员工每年享有15天带薪假期。")
    apply = faq_candidate("如何申请年假？", "请在 HR 系统中提交年假申请，经主管审批后生效。")
    got = sentence_answer("年假有多少天？", [apply, days], LEXICAL.tokens, ExtractiveConfig())
    assert got == "**每年有几天年假？**\n> 入职满一年的员工每年享有15天带薪假期。 [2]"


def faq_candidate(question: str, answer: str) -> Candidate:
    return Candidate(
        id=question,
        kind="faq",
        kb_id="kb",
        text=f"Q: {question}\nAnswer: - {answer}",
        score=0.5,
        metadata={"question": question, "answers": [answer]},
    )
