"""The rule extractor finds names, not the capitals that only start a sentence."""

from __future__ import annotations

import pytest

from rag.graph.entities import MOST_PER_TEXT, entity_key, extract_entities


def _names(text: str) -> list[str]:
    return [entity.name for entity in extract_entities(text)]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("What is the X200 battery life?", ["X200"]),
        ("The iPhone 15 follows RFC 7231.", ["iPhone 15", "iPhone", "RFC 7231", "RFC"]),
        ("The Acme X200 ships.", ["Acme X200", "X200"]),
        ("How does Bank of America handle COVID-19 claims in New York?", ["Bank of America", "COVID-19", "New York"]),
        ("Paris is the capital. Is there a NASA lab?", ["Paris", "NASA"]),
        ("Alice's cat met Bob.", ["Alice", "Bob"]),
        ("The vaccine does not cause autism.", []),
        ("Where is it? How much does it cost?", []),
        ("Bank of", ["Bank"]),
    ],
)
def test_english_names_are_capitalised_phrases_and_names_with_digits(text: str, names: list[str]) -> None:
    assert _names(text) == names


def test_chinese_proper_nouns_and_longer_nouns_are_entities() -> None:
    entities = {entity.name: entity.label for entity in extract_entities("张伟在深圳的北京大学发布会上介绍了手机。")}

    assert entities["张伟"] == "person"
    assert entities["深圳"] == "place"
    assert entities["北京大学"] == "organization"
    assert entities["手机"] == "noun"
    assert "了" not in entities
    assert "在" not in entities


def test_mixed_text_has_english_and_chinese_entities() -> None:
    assert {"Mate 60", "深圳"} <= set(_names("华为在深圳发布了Mate 60手机"))


def test_one_entity_per_key_and_at_most_the_cap() -> None:
    text = " ".join(f"Alpha{index} and ALPHA{index}." for index in range(MOST_PER_TEXT * 2))

    entities = extract_entities(text)

    assert len(entities) == MOST_PER_TEXT
    assert len({entity.key for entity in entities}) == MOST_PER_TEXT


@pytest.mark.parametrize(
    ("name", "key"),
    [("  New   York ", "new york"), ("\uff29\uff22\uff2d", "ibm"), ("iPhone 15", "iphone 15"), ("深圳", "深圳")],
)
def test_names_match_folded(name: str, key: str) -> None:
    assert entity_key(name) == key
