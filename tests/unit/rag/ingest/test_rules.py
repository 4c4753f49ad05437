"""Chunking rules: defaults, round trip, and errors that name the field and its allowed range."""

from __future__ import annotations

from typing import Any

import pytest

from rag.errors import InvalidRule
from rag.ingest.rules import ChunkingRule, parse_rule


def test_no_rule_gives_the_defaults() -> None:
    assert parse_rule(None) == ChunkingRule()
    assert parse_rule({}) == ChunkingRule()


def test_the_default_follows_the_structure_and_children_stay_recursive() -> None:
    rule = ChunkingRule()
    assert rule.segment.mode == "structure"
    assert rule.child.mode == "recursive"
    assert parse_rule({"segment": {"max_tokens": 256}}).segment.mode == "structure"


def test_parent_child_keeps_recursive_parents_unless_it_names_their_mode() -> None:
    assert parse_rule({"mode": "parent_child"}).segment.mode == "recursive"
    assert parse_rule({"mode": "parent_child", "segment": {"mode": "structure"}}).segment.mode == "structure"


# The stored form of the default rule before `structure` existed: knowledge bases keep the rule they were created
# with, so theirs stays recursive and its fingerprint stays the same (their documents are not re-split).
OLD_DEFAULT = {
    "mode": "general",
    "parent_mode": "paragraph",
    "segment": {"mode": "recursive", "max_tokens": 500, "overlap": 50, "separator": "\n\n", "unit": "tokens"},
    "child": {"mode": "recursive", "max_tokens": 200, "overlap": 20, "separator": "\n", "unit": "tokens"},
    "cleaning": {"remove_extra_whitespace": True, "remove_urls_emails": False},
}


def test_a_stored_rule_of_the_old_default_keeps_its_mode_and_fingerprint() -> None:
    rule = parse_rule(OLD_DEFAULT)
    assert rule.segment.mode == "recursive"
    assert rule.fingerprint() == "6eb67736eaee7346"  # as computed before `structure` was added
    # A knowledge base created with the new default has another fingerprint: its documents are split anew.
    assert ChunkingRule().fingerprint() != rule.fingerprint()


def test_a_rule_survives_its_stored_form() -> None:
    rule = parse_rule(
        {
            "mode": "parent_child",
            "parent_mode": "full_doc",
            "segment": {"mode": "markdown", "max_tokens": 1200, "overlap": 0},
            "child": {"mode": "fixed", "max_tokens": 120, "overlap": 12, "separator": "\\n"},
            "cleaning": {"remove_urls_emails": True},
        }
    )
    assert parse_rule(rule.to_dict()) == rule
    assert rule.child.separator == "\\n"
    assert rule.cleaning.remove_urls_emails is True
    assert rule.cleaning.remove_extra_whitespace is True


def test_fingerprint_changes_with_any_setting() -> None:
    base = parse_rule({})
    assert base.fingerprint() == parse_rule({}).fingerprint()
    assert base.fingerprint() != parse_rule({"segment": {"max_tokens": 501}}).fingerprint()
    assert base.fingerprint() != parse_rule({"cleaning": {"remove_urls_emails": True}}).fingerprint()


BAD_RULES: list[tuple[dict[str, Any], str, str]] = [
    ({"mode": "smart"}, "mode", "general or parent_child"),
    ({"parent_mode": "chapter"}, "parent_mode", "paragraph or full_doc"),
    ({"segment": {"max_tokens": 49}}, "segment.max_tokens", "50..2000"),
    ({"segment": {"max_tokens": 2001}}, "segment.max_tokens", "50..2000"),
    ({"segment": {"max_tokens": "500"}}, "segment.max_tokens", "whole number"),
    ({"segment": {"max_tokens": True}}, "segment.max_tokens", "whole number"),
    ({"segment": {"max_tokens": 500, "overlap": 251}}, "segment.overlap", "0..250"),
    ({"segment": {"overlap": -1}}, "segment.overlap", "0..250"),
    ({"child": {"max_tokens": 100, "overlap": 60}}, "child.overlap", "0..50"),
    ({"segment": {"mode": "semantic"}}, "segment.mode", "structure, recursive, fixed, markdown, token"),
    ({"segment": {"unit": "words"}}, "segment.unit", "tokens or chars"),
    ({"segment": {"separator": 3}}, "segment.separator", "text"),
    ({"segment": {"separator": "x" * 33}}, "segment.separator", "32 characters"),
    ({"segment": {"size": 3}}, "segment", "unknown field(s) size"),
    ({"cleaning": {"remove_extra_whitespace": "yes"}}, "cleaning.remove_extra_whitespace", "true or false"),
    ({"cleaning": {"strip_html": True}}, "cleaning", "unknown field(s) strip_html"),
    ({"chunking": {}}, "rule", "unknown field(s) chunking"),
    (
        {"mode": "parent_child", "segment": {"max_tokens": 200}, "child": {"max_tokens": 300}},
        "child.max_tokens",
        "must not exceed segment.max_tokens (200)",
    ),
]


@pytest.mark.parametrize(("data", "field", "message"), BAD_RULES)
def test_bad_rule_names_the_field_and_the_allowed_values(data: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(InvalidRule) as caught:
        parse_rule(data)
    assert caught.value.field == field
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"{field}: ")


def test_full_doc_parents_allow_children_larger_than_the_segment_setting() -> None:
    rule = parse_rule(
        {
            "mode": "parent_child",
            "parent_mode": "full_doc",
            "segment": {"max_tokens": 100},
            "child": {"max_tokens": 300},
        }
    )
    assert rule.child.max_tokens == 300
