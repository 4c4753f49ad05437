"""The web search blacklist: /regex/ rules, wildcard rules over the whole URL, bad rules refused with their line."""

from __future__ import annotations

import re

import pytest

from rag.web.blacklist import Blacklist, BlacklistError

RULES = """
# forums and a content farm
/example\\.(net|org)/
*://*.spam.example.com/*
https://ads.example.com/*
"""


@pytest.mark.parametrize(
    ("url", "blocked"),
    [
        ("https://www.example.net/page", True),  # the regex, anywhere in the URL
        ("http://example.org", True),
        ("https://example.com/exampleXnet", False),  # the regex's "\\." is a dot, not any character
        ("https://a.spam.example.com/x", True),  # the wildcard, over the whole URL
        ("HTTPS://A.SPAM.EXAMPLE.COM/X", True),
        ("https://spam.example.com/x", False),  # `*.` asks for a subdomain
        ("https://ads.example.com/banner", True),
        ("https://ok.example.com/?next=https://ads.example.com/x", False),  # a wildcard is anchored at the start
        ("https://docs.python.org/3/", False),
    ],
)
def test_rules_block_by_regex_anywhere_and_by_wildcard_over_the_whole_url(url: str, blocked: bool) -> None:
    assert Blacklist.parse(RULES).blocks(url) is blocked


def test_no_rules_block_nothing() -> None:
    assert not Blacklist.parse("").blocks("https://example.net/")
    assert not Blacklist.parse("\n# only a comment\n").blocks("https://example.net/")


@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        ("*://ok.example.com/*\n/foo(bar/", 2, "not a valid regular expression"),
        ("/a/\n\n/unclosed", 3, "must end with '/'"),
        ("//", 1, "empty regular expression"),
        ("https://[example.com/*", 1, "unclosed '['"),
    ],
)
def test_an_invalid_rule_is_refused_naming_its_line(text: str, line: int, why: str) -> None:
    with pytest.raises(BlacklistError, match=re.escape(why)) as refused:
        Blacklist.parse(text)
    assert refused.value.line == line
    assert f"line {line}" in str(refused.value)
