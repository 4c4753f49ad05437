"""clean(): Dify's default rules always, whitespace and URL/email removal on request, Dify's bugs fixed."""

from __future__ import annotations

import pytest

from rag.ingest.clean import clean


@pytest.mark.parametrize(
    ("text", "cleaned"),
    [
        ("<|im_start|>user<|im_end|>", "<im_start>user<im_end>"),
        ("a <| b |> c", "a < b > c"),
        ("line one\r\nline two\rline three", "line one\nline two\nline three"),
        ("nul\x00 bell\x07 esc\x1b del\x7f c1\x9b", "nul bell esc del c1"),
        ("tab\tand\nnewline stay", "tab\tand\nnewline stay"),
        ("page one\x0cpage two", "page one\npage two"),
        (
            "vertical\x0btab, next\x85line, line\u2028sep, para\u2029sep",
            "vertical\ntab, next\nline, line\nsep, para\nsep",
        ),
        ("non\ufffecharacter\uffffs", "noncharacters"),
    ],
)
def test_default_rules_always_apply(text: str, cleaned: str) -> None:
    assert clean(text) == cleaned


@pytest.mark.parametrize("text", ["¿Qué tal?", "naïve café", "¾ cup", "中文：全角标点！"])
def test_default_rules_keep_the_letters_difys_pattern_deletes(text: str) -> None:
    # Dify's pattern lists the UTF-8 bytes of U+FFFE as str characters, which are the letters ï ¿ ¾.
    assert clean(text) == text


def test_markers_split_by_a_control_character_are_still_removed() -> None:
    assert clean("<\x00|endoftext|\x00>") == "<endoftext>"


def test_optional_rules_are_off_by_default() -> None:
    text = "see   https://example.com or mail a@b.org\n\n\n\nend"
    assert clean(text) == text


@pytest.mark.parametrize(
    ("text", "cleaned"),
    [
        ("a  b\t\tc \t d", "a b c d"),
        ("single\ttab and space", "single\ttab and space"),
        ("one\n\n\n\ntwo", "one\n\ntwo"),
        ("one\n  \n\t\n \ntwo", "one\n\ntwo"),
        ("trailing   \nspaces", "trailing\nspaces"),
        ("全角\u3000\u3000空格", "全角 空格"),
        ("keep\n\ntwo newlines", "keep\n\ntwo newlines"),
    ],
)
def test_remove_extra_whitespace(text: str, cleaned: str) -> None:
    assert clean(text, remove_extra_whitespace=True) == cleaned


@pytest.mark.parametrize(
    ("text", "cleaned"),
    [
        ("see https://example.com/a?b=1 now", "see  now"),
        ("end of sentence https://example.com/page.", "end of sentence ."),
        ("(see https://example.com)", "(see )"),
        ("wiki https://en.wikipedia.org/wiki/Foo_(bar) here", "wiki  here"),
        ("visit www.example.com today", "visit  today"),
        ("访问https://example.cn/x获取答案", "访问获取答案"),
        ("mail me@example.org, or mailto:you@example.co.uk", "mail , or "),
        ("read [the docs](https://example.com/docs) first", "read the docs first"),
        ('read [the docs](https://example.com/docs "Docs") first', "read the docs first"),
        ("[a page](https://en.wikipedia.org/wiki/Foo_(bar))", "a page"),
        ("a picture ![a cat](https://img.example.com/cat.png) here", "a picture a cat here"),
        ("![](https://img.example.com/x.png)", ""),
        ("[![badge](https://img.shields.io/b.svg)](https://ci.example.com)", "badge"),
        ("[write to us](mailto:team@example.com)", "write to us"),
        ("[relative](./other.md) link", "relative link"),
        ("autolink <https://example.com> and <me@example.com>", "autolink  and "),
        ("[https://example.com](https://example.com)", ""),
    ],
)
def test_remove_urls_and_emails_keeps_link_and_alt_text(text: str, cleaned: str) -> None:
    assert clean(text, remove_urls_emails=True) == cleaned


def test_all_rules_together_leave_tidy_text() -> None:
    text = "Docs:\r\n\r\n\r\n  see  [the guide](https://x.io/g)  or  https://x.io\x00 .\r\n"
    cleaned = clean(text, remove_extra_whitespace=True, remove_urls_emails=True)
    assert cleaned == "Docs:\n\n see the guide or .\n"
