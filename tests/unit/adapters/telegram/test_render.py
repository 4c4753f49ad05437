"""Markdown to Telegram HTML: the tags Telegram takes, escaped text, and valid HTML for any prefix of an answer."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.telegram.render import to_telegram_html

_TAG = re.compile(r"<(/?)([a-z-]+)[^>]*>")


def _balanced(html_text: str) -> bool:
    stack: list[str] = []
    for closing, name in _TAG.findall(html_text):
        if not closing:
            stack.append(name)
        elif not stack or stack.pop() != name:
            return False
    return not stack and "<script" not in html_text


@pytest.mark.parametrize(
    ("markdown", "html"),
    [
        ("**bold** and _it_", "<b>bold</b> and <i>it</i>"),
        ("`a<b` & c", "<code>a&lt;b</code> &amp; c"),
        ("[site](https://e.com/?a=1&b=2)", '<a href="https://e.com/?a=1&amp;b=2">site</a>'),
        ("[x](javascript:alert(1))", "[x](javascript:alert(1))"),
        ("## Title", "<b>Title</b>"),
        ("- one\n- two", "• one\n• two"),
        ("> quoted", "<blockquote>quoted</blockquote>"),
        ("```py\nx = 1 < 2\n```", '<pre><code class="language-py">x = 1 &lt; 2</code></pre>'),
        ("snake_case_name 2*3*4", "snake_case_name 2*3*4"),
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("**unclosed bold", "**unclosed bold"),
        ("```\nunclosed fence", "<pre>unclosed fence</pre>"),
    ],
)
def test_markdown_becomes_the_html_telegram_accepts(markdown: str, html: str) -> None:
    assert to_telegram_html(markdown) == html


@given(st.text(alphabet="ab *_`[]()#->\n<&~", max_size=80))
def test_every_prefix_of_any_text_renders_to_balanced_html(text: str) -> None:
    for end in range(len(text) + 1):
        assert _balanced(to_telegram_html(text[:end]))
