"""RuleRewriter on hand-made conversations: what it resolves in English and Chinese, and what it must leave alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.eval.rewrite_eval import evaluate, rounds
from rag.rewrite import RewriteResult, Round
from rag.rewrite_rules import RuleRewriter


@pytest.fixture(scope="module")
def rules() -> RuleRewriter:
    """One rewriter for the module, so jieba's dictionary loads once."""
    return RuleRewriter()


async def _rewrite(rules: RuleRewriter, query: str, *history: Round) -> RewriteResult:
    return await rules.rewrite(query, list(history))


# ---------------------------------------------------------------- English: what gets resolved


async def test_it_becomes_the_noun_phrase_of_the_last_question(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "Is it treatable?", ("What is throat cancer?", ""))
    assert result == RewriteResult("Is throat cancer treatable?", "rules", "resolved it->throat cancer")


async def test_its_becomes_a_possessive(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "What are its symptoms?", ("What is throat cancer?", ""))
    assert result.text == "What are throat cancer's symptoms?"


async def test_she_becomes_the_person_named_in_the_history(rules: RuleRewriter) -> None:
    history = ("Who is Marie Curie?", "Marie Curie was a physicist and chemist.")
    result = await _rewrite(rules, "When did she win the Nobel Prize?", history)
    assert result.text == "When did Marie Curie win the Nobel Prize?"


async def test_a_surname_mention_resolves_to_the_full_name(rules: RuleRewriter) -> None:
    history = [("Tell me about Weeb Ewbank", ""), ("When did Ewbank retire?", "He retired in 1973.")]
    result = await _rewrite(rules, "Where did he live?", *history)
    assert result.text == "Where did Weeb Ewbank live?"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What was her best known work?", "What was Ada Lovelace's best known work?"),
        ("Who taught her?", "Who taught Ada Lovelace?"),
    ],
    ids=["possessive", "object"],
)
async def test_her_is_possessive_before_a_noun_and_an_object_otherwise(
    rules: RuleRewriter, query: str, expected: str
) -> None:
    result = await _rewrite(rules, query, ("Who is Ada Lovelace?", "Ada Lovelace was a mathematician."))
    assert result.text == expected


async def test_they_prefers_a_plural_and_skips_the_relational_head(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "Are they endangered?", ("What are the different types of sharks?", ""))
    assert result.text == "Are sharks endangered?"


async def test_they_can_be_a_group_name(rules: RuleRewriter) -> None:
    history = ("Tell me about the Beatles", "The Beatles were an English rock band.")
    result = await _rewrite(rules, "When did they split up?", history)
    assert result.text == "When did the Beatles split up?"


async def test_a_name_with_the_article_is_a_thing_not_a_person(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "how tall is it?", ("What is the Eiffel Tower?", ""))
    assert result.text == "how tall is the Eiffel Tower?"


async def test_the_subject_of_the_answers_first_sentence_when_the_question_names_nothing(rules: RuleRewriter) -> None:
    history = ("Tell me more", "The Eiffel Tower is in Paris. It was built in 1889 for the World's Fair.")
    result = await _rewrite(rules, "How tall is it?", history)
    assert result.text == "How tall is the Eiffel Tower?"


async def test_a_pronoun_starting_the_query_gets_a_capital(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "its symptoms?", ("What is throat cancer?", ""))
    assert result.text == "Throat cancer's symptoms?"


async def test_only_the_first_pronoun_of_a_kind_is_replaced(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "Did he say he would return?", ("Who is Pierre Curie?", ""))
    assert result.text == "Did Pierre Curie say he would return?"


async def test_a_name_followed_by_a_verb_is_not_taken_as_a_compound(rules: RuleRewriter) -> None:
    history = ("Tell me about the Beatles", "The Beatles released Abbey Road in 1969.")
    result = await _rewrite(rules, "Did they tour?", history)
    assert result.text == "Did the Beatles tour?"


# ---------------------------------------------------------------- English: what must stay unchanged


@pytest.mark.parametrize(
    ("query", "history"),
    [
        ("What is the capital of France?", ("What is throat cancer?", "")),
        ("When was this album released?", ("Tell me about Abbey Road", "")),
        ("What happened after that?", ("Tell me about Abbey Road", "")),
        ("Is there a film that won awards?", ("Tell me about Abbey Road", "")),
        ("Is it true that sharks sleep?", ("Tell me about sharks", "")),
        ("How old is he?", ("hello", "hi")),
        ("Is throat cancer treatable and is it curable?", ("What is throat cancer?", "")),
    ],
    ids=["no-pronoun", "determiner", "after-that", "relative-that", "expletive-it", "no-antecedent", "already-named"],
)
async def test_english_query_without_a_resolvable_reference_is_unchanged(
    rules: RuleRewriter, query: str, history: Round
) -> None:
    result = await _rewrite(rules, query, history)
    assert result == RewriteResult(query, "none", "no reference resolved")


@pytest.mark.parametrize("query", ["Is it treatable?", "它的导演是谁"])
async def test_no_history_means_no_rewrite(rules: RuleRewriter, query: str) -> None:
    assert await rules.rewrite(query, []) == RewriteResult(query, "none", "no history")


# ---------------------------------------------------------------- Chinese: what gets resolved


async def test_ta_it_becomes_what_the_user_asked_about(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "它的导演是谁", ("你看过流浪地球吗", "看过，特效很震撼。"))
    assert result == RewriteResult("流浪地球的导演是谁", "rules", "resolved 它->流浪地球")


async def test_ta_he_becomes_a_name_the_user_said_alone(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "那你怎么会不知道他的外号", ("华晨宇", "华晨宇路人粉飘过"))
    assert result.text == "那你怎么会不知道华晨宇的外号"


async def test_ta_she_becomes_a_person_name_from_the_answer(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "她漂亮吗", ("我是不是很漂亮", "我说的是刘诗诗"))
    assert result.text == "刘诗诗漂亮吗"


async def test_qi_becomes_a_possessive(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "其总部在哪里", ("你知道华为吗", "知道"))
    assert result.text == "华为的总部在哪里"


async def test_demonstrative_with_its_noun_is_replaced_whole(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "这个电影好看吗", ("你看过流浪地球吗", "看过"))
    assert result.text == "流浪地球好看吗"


async def test_ellipsis_swaps_the_entity_of_the_previous_question(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "那北京呢", ("上海的天气怎么样", "上海今天多云。"))
    assert result == RewriteResult("北京的天气怎么样", "rules", "ellipsis 上海->北京")


async def test_ellipsis_of_an_attribute_asks_it_of_the_previous_entity(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "价格呢？", ("iPhone 15怎么样", "不错"))
    assert result.text == "iPhone 15的价格呢"


# ---------------------------------------------------------------- Chinese: what must stay unchanged


@pytest.mark.parametrize(
    ("query", "history"),
    [
        ("你那有这首歌嘛", ("你喜欢杨千嬅吗", "喜欢")),
        ("我喜欢吃苹果", ("你知道华为吗", "知道")),
        ("北京呢", ("今天天气怎么样", "晴")),
        ("那你呢", ("上海的天气怎么样", "多云")),
        ("他去哪了", ("你好", "你好呀")),
        ("流浪地球的导演是谁", ("你看过流浪地球吗", "看过")),
    ],
    ids=[
        "na-means-there",
        "no-pronoun",
        "ellipsis-without-a-matching-entity",
        "ellipsis-of-a-pronoun",
        "no-antecedent",
        "already-named",
    ],
)
async def test_chinese_query_without_a_resolvable_reference_is_unchanged(
    rules: RuleRewriter, query: str, history: Round
) -> None:
    result = await _rewrite(rules, query, history)
    assert result == RewriteResult(query, "none", "no reference resolved")


# ---------------------------------------------------------------- the evaluation's reading of the sets


def test_rounds_turn_canard_context_into_a_leading_round_and_pair_turns() -> None:
    history = [
        {"role": "context", "text": "Weeb Ewbank"},
        {"role": "context", "text": "Later life"},
        {"role": "user", "text": "When did he retire?"},
        {"role": "assistant", "text": "In 1973."},
        {"role": "user", "text": "Where did he go?"},
    ]
    assert rounds(history) == [
        ("Weeb Ewbank", "Later life"),
        ("When did he retire?", "In 1973."),
        ("Where did he go?", ""),
    ]


def test_rounds_of_user_only_history_have_empty_answers() -> None:
    history = [{"role": "user", "text": "What is throat cancer?"}, {"role": "user", "text": "Is it treatable?"}]
    assert rounds(history) == [("What is throat cancer?", ""), ("Is it treatable?", "")]


async def test_evaluate_scores_the_rewriter_and_the_unchanged_query(rules: RuleRewriter, tmp_path: Path) -> None:
    rows = [
        {"id": "1", "history": [{"role": "user", "text": "What is throat cancer?"}], "query": "Is it treatable?",
         "gold_rewrite": "Is throat cancer treatable?"},
        {"id": "2", "history": [], "query": "What is jazz?", "gold_rewrite": "What is jazz?"},
    ]  # fmt: skip
    (tmp_path / "rewrite.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    scores = await evaluate(tmp_path, rules)
    assert (scores.count, scores.exact_match, scores.token_f1) == (2, 1.0, 1.0)
    assert scores.identity_exact_match == 0.5
    assert scores.identity_token_f1 == pytest.approx((2 * (2 / 3) * (2 / 4) / (2 / 3 + 2 / 4) + 1.0) / 2)
    assert (scores.changed, scores.changed_f1) == (1, 1.0)
    assert (scores.up, scores.same, scores.down) == (1, 0, 0)
