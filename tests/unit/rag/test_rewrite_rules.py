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


# ---------------------------------------------------------------- defects seen in use (issue 18)

_VACATION = (
    "What is the vacation policy?",
    "Up to 5 unused vacation days can be carried over to the next year; they expire on 31 March.",
)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Can I carry them over?", "Can I carry unused vacation days over?"),
        ("And when do they expire?", "And when do unused vacation days expire?"),
    ],
    ids=["them", "they"],
)
async def test_they_and_them_take_a_plural_noun_phrase_after_a_number(
    rules: RuleRewriter, query: str, expected: str
) -> None:
    result = await _rewrite(rules, query, _VACATION)
    assert (result.text, result.method) == (expected, "rules")


@pytest.mark.parametrize("lead", ["What about", "How about", "And"])
async def test_an_elliptical_follow_up_takes_the_previous_question_with_its_parallel_name_swapped(
    rules: RuleRewriter, lead: str
) -> None:
    history = ("Does ragbot support Slack?", "Yes, ragbot answers in Slack channels and threads.")
    result = await _rewrite(rules, f"{lead} Telegram?", history)
    assert (result.text, result.method) == ("Does ragbot support Telegram?", "rules")


async def test_and_the_noun_swaps_the_noun_phrase_with_the_same_head(rules: RuleRewriter) -> None:
    history = ("Does the Slack adapter stream answers?", "Yes, it edits one message as the answer arrives.")
    result = await _rewrite(rules, "And the Telegram adapter?", history)
    assert result.text == "Does the Telegram adapter stream answers?"


async def test_that_standing_for_the_previous_action_is_not_replaced_by_a_noun(rules: RuleRewriter) -> None:
    history = ("How do I reset my password?", "Open Settings, choose Security and click Reset password.")
    result = await _rewrite(rules, "what if that doesn't work", history)
    assert result.text in ("what if that doesn't work", "what if resetting my password doesn't work")


async def test_the_most_recent_round_dominates_an_older_topic(rules: RuleRewriter) -> None:
    history = [
        ("How do I set up the VPN?", "Install the VPN client, then sign in to the VPN with your account."),
        ("Is the VPN available on phones?", "Yes, the VPN client runs on iOS and Android."),
        ("What does the health insurance cover?", "The health insurance covers doctor visits and hospital stays."),
    ]
    result = await _rewrite(rules, "Can my kids be added to it?", *history)
    assert result.text == "Can my kids be added to the health insurance?"


@pytest.mark.parametrize(
    "answer",
    [
        "Sorry, I couldn't find anything about that in the knowledge base.",
        "Unfortunately, nothing in the documents answers this.",
        "Hmm, I am not sure.",
        "Sorry I couldn't find anything about that.",
        "Unfortunately nothing in the documents answers this.",
    ],
)
async def test_an_interjection_opening_the_answer_is_never_a_referent(rules: RuleRewriter, answer: str) -> None:
    result = await _rewrite(rules, "how do I request it?", ("What is the parental leave form?", answer))
    assert result.text == "how do I request the parental leave form?"


async def test_the_answer_is_a_weaker_source_than_the_users_own_question(rules: RuleRewriter) -> None:
    history = ("How do I book a meeting room?", "Use the Outlook calendar and add the room as a resource.")
    result = await _rewrite(rules, "Is it free?", history)
    assert result.text == "Is a meeting room free?"


@pytest.mark.parametrize("query", ["Who is the CEO?", "How do I set up the VPN?", "What is the parental leave policy?"])
async def test_a_self_contained_question_comes_back_unchanged(rules: RuleRewriter, query: str) -> None:
    history = [("What does the health insurance cover?", "The health insurance covers doctor visits.")]
    result = await _rewrite(rules, query, *history)
    assert result == RewriteResult(query, "none", "no reference resolved")


@pytest.mark.parametrize(
    "query",
    ["it", "Why?", "Wie funktioniert das?", "Как это работает?", "Comment ça marche ?", "それはいつですか"],
    ids=["one-word-pronoun", "one-word", "german", "russian", "french", "japanese"],
)
async def test_a_one_word_question_or_one_in_a_language_without_rules_is_unchanged(
    rules: RuleRewriter, query: str
) -> None:
    history = [("What does the health insurance cover?", "The health insurance covers doctor visits.")]
    result = await _rewrite(rules, query, *history)
    assert (result.text, result.method) == (query, "none")


async def test_a_follow_up_as_the_first_message_is_unchanged(rules: RuleRewriter) -> None:
    result = await rules.rewrite("What about Telegram?", [])
    assert result == RewriteResult("What about Telegram?", "none", "no history")


async def test_a_long_history_is_read_only_as_far_back_as_it_matters(rules: RuleRewriter) -> None:
    history = [(f"What is project number {n}?", f"Project {n} is an internal tool.") for n in range(49)]
    history.append(("What does the health insurance cover?", "The health insurance covers doctor visits."))
    result = await _rewrite(rules, "Does it cover dentists?", *history)
    assert result.text == "Does the health insurance cover dentists?"


# ---------------------------------------------------------------- general rules behind the fixes


async def test_a_chain_of_pronouns_keeps_the_first_antecedent_salient(rules: RuleRewriter) -> None:
    history = [("What is a 529 plan?", ""), ("How does it work?", ""), ("What are the main advantages?", "")]
    result = await _rewrite(rules, "Is it tax free?", *history)
    assert result.text == "Is a 529 plan tax free?"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Was King still playing in 1983?", "Was Billie Jean King still playing in 1983?"),
        ("When was the pledge signed?", "When was the taxpayer protection pledge signed?"),
    ],
    ids=["short-name", "definite-description"],
)
async def test_a_short_name_or_a_definite_description_takes_its_fuller_earlier_form(
    rules: RuleRewriter, query: str, expected: str
) -> None:
    history = [("Billie Jean King", ""), ("What was the taxpayer protection pledge?", "A promise not to raise taxes.")]
    assert (await _rewrite(rules, query, *history)).text == expected


async def test_an_indefinite_phrase_is_not_made_fuller(rules: RuleRewriter) -> None:
    history = ("What was the taxpayer protection pledge?", "")
    result = await _rewrite(rules, "Is there a pledge for companies?", history)
    assert result.method == "none"


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ("Which language would be the easiest to learn?", "none"),
        ("Are there any other interesting albums?", "none"),
    ],
    ids=["superlative", "any-other"],
)
async def test_a_superlative_or_a_quantified_phrase_is_no_antecedent(
    rules: RuleRewriter, history: str, expected: str
) -> None:
    result = await _rewrite(rules, "Is it hard?" if "easiest" in history else "Were they popular?", (history, ""))
    assert result.method == expected


async def test_an_ellipsis_without_a_parallel_phrase_is_left_alone(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "What about disadvantages?", ("What are the main advantages?", ""))
    assert result == RewriteResult("What about disadvantages?", "none", "no reference resolved")


async def test_a_chinese_clause_naming_nothing_takes_the_topic_first(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "怎么治疗", ("节后综合征", "节后综合征有很多症状"))
    assert result == RewriteResult("节后综合征怎么治疗", "rules", "zero argument: 节后综合征")


@pytest.mark.parametrize("query", ["怎么申请年假", "嗯嗯"], ids=["names-something", "interjection"])
async def test_a_chinese_clause_that_names_something_or_is_no_clause_is_unchanged(
    rules: RuleRewriter, query: str
) -> None:
    result = await _rewrite(rules, query, ("节后综合征", "节后综合征有很多症状"))
    assert result == RewriteResult(query, "none", "no reference resolved")


async def test_a_relational_noun_without_its_argument_takes_the_topic(rules: RuleRewriter) -> None:
    history = [("What is a 529 plan?", "A savings plan for education.")]
    result = await _rewrite(rules, "What are the main advantages?", *history)
    assert result == RewriteResult("What are the main advantages of a 529 plan?", "rules", "resolved +of a 529 plan")


@pytest.mark.parametrize(
    "query", ["What are the advantages of a Roth IRA?", "Did that cause the delay?", "What types does Vanguard offer?"]
)
async def test_a_relational_noun_with_an_argument_or_used_as_a_verb_is_left_alone(
    rules: RuleRewriter, query: str
) -> None:
    result = await _rewrite(rules, query, ("What is a 529 plan?", "A savings plan for education."))
    assert result.method == "none"


async def test_a_predicate_noun_is_a_weak_antecedent(rules: RuleRewriter) -> None:
    history = [("Where are turkeys from?", ""), ("Why did Ben Franklin want a turkey to be the national symbol?", "")]
    result = await _rewrite(rules, "How did he cook it?", *history)
    assert result.text == "How did Ben Franklin cook a turkey?"


async def test_they_can_stand_for_a_kind_named_in_the_singular(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "How do they work?", ("What is the main function of a virtual machine?", ""))
    assert result.text == "How do virtual machines work?"


async def test_a_pronoun_bound_by_an_earlier_conjunct_is_left_alone(rules: RuleRewriter) -> None:
    query = "What is the Galileo system and why is it important?"
    assert (await _rewrite(rules, query, ("What was the first artificial satellite?", ""))).method == "none"


@pytest.mark.parametrize(
    ("history", "query", "expected"),
    [
        ("Tell me about Tennessee Williams", "Where was he born?", "Where was Tennessee Williams born?"),
        ("What did the Stanford Experiment show?", "Was it ethical?", "Was the Stanford Experiment ethical?"),
    ],
    ids=["name-ending-in-s-is-one-person", "verb-after-an-inverted-subject"],
)
async def test_names_are_read_as_one_thing_up_to_their_verb(
    rules: RuleRewriter, history: str, query: str, expected: str
) -> None:
    assert (await _rewrite(rules, query, (history, ""))).text == expected


async def test_the_opening_question_keeps_setting_the_topic(rules: RuleRewriter) -> None:
    history = [
        ("Tell me about the Stanford prison experiment.", ""),
        ("Was there a film?", ""),
        ("Who took part?", ""),
        ("What did the guards do?", ""),
        ("Which prisoners left early?", ""),
    ]
    result = await _rewrite(rules, "Was it ethical?", *history)
    assert result.text == "Was the Stanford prison experiment ethical?"


async def test_a_number_tells_things_of_one_kind_apart(rules: RuleRewriter) -> None:
    history = [("Where is room 12?", "On the first floor."), ("Is room 14 free?", "Yes.")]
    assert (await _rewrite(rules, "Can I book it?", *history)).text == "Can I book room 14?"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What is the largest ever caught?", "What is the largest shark ever caught?"),
        ("Which ones are endangered?", "Which tiger sharks are endangered?"),
        ("Which language would be the easiest to learn?", None),
    ],
    ids=["superlative-without-its-noun", "ones", "superlative-with-its-noun"],
)
async def test_a_superlative_or_ones_without_a_noun_takes_the_topics_noun(
    rules: RuleRewriter, query: str, expected: str | None
) -> None:
    result = await _rewrite(rules, query, ("Tell me about tiger sharks.", ""))
    assert result.text == (expected or query)


async def test_it_takes_a_name_that_only_looked_like_a_persons(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "Can it kill you?", ("Is Red Bull bad for you?", ""))
    assert result.text == "Can Red Bull kill you?"


async def test_they_can_be_a_band_whose_name_looks_like_a_persons(rules: RuleRewriter) -> None:
    history = [("Skunk Anansie", "Formation"), ("Were they successful?", "Throughout the 1990s, the group toured.")]
    result = await _rewrite(rules, "Did they win any awards?", *history)
    assert result.text == "Did Skunk Anansie win any awards?"


async def test_a_pronoun_bound_by_a_name_in_the_question_is_left_alone(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "How many hits did Toussaint have in his career?", ("Allen Toussaint", ""))
    assert result.text == "How many hits did Allen Toussaint have in his career?"


async def test_a_lowercase_definite_phrase_is_not_made_a_persons_name(rules: RuleRewriter) -> None:
    result = await _rewrite(rules, "Was the braxton album a hit?", ("Tell me about Tamar Braxton", ""))
    assert result.method == "none"


async def test_long_answers_without_full_stops_are_read_only_in_part(rules: RuleRewriter) -> None:
    rambling = " and ".join(f"the part{n}" for n in range(800))  # 10,000 characters and no full stop
    history = [(f"What does plan {n} cover?", rambling) for n in range(49)]
    history.append(("What does the health insurance cover?", "The health insurance covers doctor visits."))
    result = await _rewrite(rules, "Does it cover dentists?", *history)
    assert result.text == "Does the health insurance cover dentists?"


async def test_a_very_long_query_is_left_alone(rules: RuleRewriter) -> None:
    query = "Does it cover " + "dentists and " * 60 + "opticians?"
    result = await _rewrite(rules, query, ("What does the health insurance cover?", ""))
    assert result == RewriteResult(query, "none", "too long for a follow-up")


@pytest.mark.parametrize(
    "answer",
    [
        "Sorry, I couldn't find anything about that.",
        "Sorry I couldn't find anything about that.",
        "Unfortunately nothing answers this.",
    ],
)
async def test_an_interjection_is_no_referent_even_when_nothing_else_is_there(rules: RuleRewriter, answer: str) -> None:
    result = await _rewrite(rules, "how do I request it?", ("Hi", answer))
    assert result == RewriteResult("how do I request it?", "none", "no reference resolved")


@pytest.mark.parametrize(
    ("history", "query", "expected"),
    [
        (("How do I reset my password?", ""), "Can I reuse it?", "Can I reuse my password?"),
        (("Hi", "Your password is valid for 90 days."), "When does it expire?", "When does my password expire?"),
    ],
    ids=["the-users-own", "the-answers-your-is-the-users-my"],
)
async def test_a_possessive_stays_with_its_noun_as_the_user_would_say_it(
    rules: RuleRewriter, history: Round, query: str, expected: str
) -> None:
    assert (await _rewrite(rules, query, history)).text == expected
