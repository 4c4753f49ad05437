"""The web page's Markdown renderer against hostile answers: no text costs it more than linear work, and no
text becomes live HTML (issue 19, item 16).

A model's answer, or a document it quotes, is text a stranger may have written. The renderer runs in every
reader's tab on every streamed piece, so text built to make it read the answer again for each delimiter would
freeze the tab (1.5 s a render at 32 KB before this fix), and text that became HTML would run in it.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable

import pytest
import pytest_asyncio
from playwright.async_api import Browser

from tests.security.web_page_support import RendererPage, Work, chromium, renderer_site

KB = 1024
# Work per character of input a render may take: blocks of the renderer run, plus characters searched and
# URL-parsed. The renderer takes 3 to 22 on the inputs below; the one before this fix took thousands at 32 KB.
WORK_PER_CHARACTER = 40


def _repeat(unit: str) -> Callable[[int], str]:
    def build(size: int) -> str:
        return (unit * (size // len(unit) + 1))[:size]

    return build


def _growing_backtick_runs(size: int) -> str:
    """Runs of 1, 2, 3, ... backticks: no two alike, so none closes another."""
    runs = []
    length = 0
    while length < size:
        runs.append("`" * (len(runs) + 1) + "a ")
        length += len(runs[-1])
    return "".join(runs)[:size]


def _wide_header_over_one_character_rows(size: int) -> str:
    """A table as wide as a quarter of the text, then one-character rows: padded to the header's width, they would
    make columns times rows cells (the quadratic blow-up cmark-gfm and markdown-it cap)."""
    columns = size // 8
    head = "|a" * columns + "|\n" + "|-" * columns + "|\n"
    return head + _repeat("|\n")(size - len(head))


def _table_rows(size: int) -> str:
    """A table header, then thousands of rows with a code span, bold and a link in their cells."""
    return (
        "| command | what it does |\n| --- | :-: |\n" + _repeat("| `/kb` | **x** [a](https://a.example) |\n")(size)
    )[:size]


# Text built so that each delimiter in it is unmatched, which made the renderer read on to the end for each; and
# text shaped like tables, which the renderer must read once however they are cut.
CRAFTED = {
    "unclosed stars": _repeat("*a "),
    "unclosed underscores": _repeat("_a "),
    "unclosed double stars": _repeat("**a "),
    "unclosed strike-throughs": _repeat("~~a "),
    "backtick runs that never close": _growing_backtick_runs,
    "open brackets": _repeat("["),
    "links never closed": _repeat("[a]("),
    "URL starts that are no URL": _repeat("http://["),
    "quotes nested on one line": _repeat(">"),
    "every delimiter in turn": _repeat("*_~`[<h"),
    "one line of pipes": _repeat("|"),
    "lines of pipes": _repeat("|\n"),
    "thousands of table rows": _table_rows,
    "delimiter rows without a header": _repeat("\n| --- | :-: |"),
    "delimiter rows under one another": _repeat("| --- |\n"),
    "header and delimiter rows of unequal width": _repeat("| a | b |\n| - |\n"),
    "a wide header over one-character rows": _wide_header_over_one_character_rows,
    "a row of escaped pipes": lambda size: ("| a | b |\n| - | - |\n" + _repeat("\\|")(size))[:size],
}

# Everyday Markdown renders as it did before the renderer was made linear (HTML from the renderer before).
EVERYDAY = [
    (
        "The VPN client is installed from the **Software Center** app [1].",
        "<p>The VPN client is installed from the <strong>Software Center</strong> app [1].</p>",
    ),
    (
        "1. Open the Software Center\n2. Search for `VPN`\n3. Press **Install**",
        "<ol><li>Open the Software Center</li><li>Search for <code>VPN</code></li>"
        "<li>Press <strong>Install</strong></li></ol>",
    ),
    ("3. Third\n4. Fourth", '<ol start="3"><li>Third</li><li>Fourth</li></ol>'),
    (
        "- Laptops\n  - *Windows*: Software Center\n  - macOS: Self Service\n- Phones",
        "<ul><li>Laptops<ul><li><em>Windows</em>: Software Center</li><li>macOS: Self Service</li></ul></li>"
        "<li>Phones</li></ul>",
    ),
    (
        "```python\nprint('<b>not bold</b>')\n```",
        "<pre><code data-language=\"python\">print('&lt;b&gt;not bold&lt;/b&gt;')</code></pre>",
    ),
    (
        "## Set-up\n\nSee [the guide](https://example.com/vpn_guide), <https://example.com/faq> or "
        "https://example.com/help.",
        '<h4>Set-up</h4><p>See <a href="https://example.com/vpn_guide" rel="noopener noreferrer" target="_blank">'
        'the guide</a>, <a href="https://example.com/faq" rel="noopener noreferrer" target="_blank">'
        'https://example.com/faq</a> or <a href="https://example.com/help" rel="noopener noreferrer" '
        'target="_blank">https://example.com/help</a>.</p>',
    ),
    (
        "> Quoted from the handbook\n> > and quoted in it",
        "<blockquote><p>Quoted from the handbook</p><blockquote><p>and quoted in it</p></blockquote></blockquote>",
    ),
    (
        "snake_case_name, ~~old~~ and _italic_",
        "<p>snake_case_name, <del>old</del> and <em>italic</em></p>",
    ),
    ("Line one\nline two\n\n---\n\nAfter the rule", "<p>Line one<br>line two</p><hr><p>After the rule</p>"),
    (
        "**bold with *italic* inside** and ``a `tick` inside``",
        "<p><strong>bold with <em>italic</em> inside</strong> and <code>a `tick` inside</code></p>",
    ),
    ("\\*not emphasis\\* and 2 * 3 * 4", "<p>*not emphasis* and 2 * 3 * 4</p>"),
    ("[click](javascript:alert(1)) stays as written", "<p>[click](javascript:alert(1)) stays as written</p>"),
    ("中文**粗体**文字与`代码`", "<p>中文<strong>粗体</strong>文字与<code>代码</code></p>"),
    # Pipes with no delimiter row under them, or one of another width, are no table.
    ("a | b and c | d\nmore | text", "<p>a | b and c | d<br>more | text</p>"),
    ("| a | b |\n| --- |\n| 1 | 2 |", "<p>| a | b |<br>| --- |<br>| 1 | 2 |</p>"),
    ("| a |\n\n| --- |", "<p>| a |</p><p>| --- |</p>"),
]

# GitHub-flavoured pipe tables (a header row, a delimiter row of as many cells, body rows), as GitHub renders them.
TABLES = [
    (
        "| command | what it does |\n| --- | --- |\n| `/kb list` | lists **all** bases |\n"
        "| /sources | [the sources](https://example.com/s) |",
        "<table><thead><tr><th>command</th><th>what it does</th></tr></thead><tbody>"
        "<tr><td><code>/kb list</code></td><td>lists <strong>all</strong> bases</td></tr>"
        '<tr><td>/sources</td><td><a href="https://example.com/s" rel="noopener noreferrer" target="_blank">'
        "the sources</a></td></tr></tbody></table>",
    ),
    (
        "a | b | c | d\n:-- | :-: | --: | -\n1 | 2 | 3 | 4",
        '<table><thead><tr><th align="left">a</th><th align="center">b</th><th align="right">c</th><th>d</th></tr>'
        '</thead><tbody><tr><td align="left">1</td><td align="center">2</td><td align="right">3</td><td>4</td></tr>'
        "</tbody></table>",
    ),
    (
        "| a | b |\n|---|---|\n| only one |\n| one | two | three |",
        "<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>only one</td><td></td></tr>"
        "<tr><td>one</td><td>two</td></tr></tbody></table>",
    ),
    (
        "| a \\| b | `c \\| d` |\n| - | - |\n| x\\|y | z |",
        "<table><thead><tr><th>a | b</th><th><code>c | d</code></th></tr></thead><tbody>"
        "<tr><td>x|y</td><td>z</td></tr></tbody></table>",
    ),
    (
        "| a | b |\n| - | - |",
        "<table><thead><tr><th>a</th><th>b</th></tr></thead></table>",
    ),
    (
        "Commands:\n| a | b |\n| - | - |\n| 1 | 2 |\nno pipe ends it\n\n- after",
        "<p>Commands:</p><table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td>2</td></tr>"
        "</tbody></table><p>no pipe ends it</p><ul><li>after</li></ul>",
    ),
    (
        "**Chat commands**\n> | command | what it does |\n> | --- | --- |\n> | /new | starts over |\n>\n> [1]",
        "<p><strong>Chat commands</strong></p><blockquote><table><thead><tr><th>command</th><th>what it does</th>"
        "</tr></thead><tbody><tr><td>/new</td><td>starts over</td></tr></tbody></table><p>[1]</p></blockquote>",
    ),
    (
        "- Commands:\n  | a | b |\n  | - | - |\n  | 1 | 2 |\n- next",
        "<ul><li>Commands:<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td>2</td></tr>"
        "</tbody></table></li><li>next</li></ul>",
    ),
]

XSS = "window.__xss=1"
# Markdown that tries to become an element, an attribute or a script link; what of it must show as text.
SMUGGLED = {
    "an img with onerror": (f'<img src=x onerror="{XSS}">', "<img src=x onerror="),
    "a script element": (f"<script>{XSS}</script>", "<script>"),
    "an svg with onload": (f"<svg onload={XSS}>", "<svg onload="),
    "a javascript: link": (f"[click](javascript:{XSS})", "javascript:"),
    "a javascript: link in mixed case and spaces": (f"[click](  JaVaScRiPt:{XSS} )", "JaVaScRiPt:"),
    "a javascript: link split by a tab": (f"[click](java\tscript:{XSS})", "script:"),
    "a javascript: link spelt with an entity": (f"[click](&#106;avascript:{XSS})", "&#106;avascript:"),
    "a javascript: autolink": (f"<javascript:{XSS}>", "<javascript:"),
    "a data: link": (f"[click](data:text/html,<script>{XSS}</script>)", "data:text/html"),
    "a link target breaking out of href": (f'[click](https://example.com/" onmouseover="{XSS})', "onmouseover"),
    "a bare URL breaking out of href": (f'https://example.com/"onmouseover="{XSS}', "onmouseover"),
    "an image": (f"![x](javascript:{XSS})", "![x]("),
    "html in a link label": (f"[<img src=x onerror={XSS}>](https://example.com)", "<img src=x"),
    "html in a heading": (f"# <img src=x onerror={XSS}>", "<img src=x"),
    "html in a list item": (f"- <iframe src=javascript:{XSS}>", "<iframe"),
    "html in a quote": (f"> <img src=x onerror={XSS}>", "<img src=x"),
    "html in a code span": (f"`<img src=x onerror={XSS}>`", "<img src=x"),
    "html as a fence's language": (f'```"><img src=x onerror={XSS}>\ncode\n```', "<img src=x"),
    "html in a fenced block": (f"```\n<script>{XSS}</script>\n```", "<script>"),
    "an img with onerror in a table cell": (f"| a |\n| - |\n| <img src=x onerror={XSS}> |", "<img src=x"),
    "html in a table header": (f"| <img src=x onerror={XSS}> |\n| - |", "<img src=x"),
    "a javascript: link in a table cell": (f"| a | b |\n| - | - |\n| [click](javascript:{XSS}) | b |", "javascript:"),
    "a javascript: link split by an escaped pipe": (f"| a |\n| - |\n| [click](java\\|script:{XSS}) |", "script:"),
    "an attribute through a delimiter row": (f'| a |\n| :-" onmouseover="{XSS} |\n| b |', "onmouseover"),
    "html in a quoted table": (f"> | a |\n> | - |\n> | <script>{XSS}</script> |", "<script>"),
}

# Pieces of the attacks above, and of Markdown, for random texts.
FRAGMENTS = [
    f"<img src=x onerror={XSS}>",
    f"<script>{XSS}</script>",
    "javascript:",
    "JaVaScRiPt:",
    "data:text/html,",
    "&#106;",
    "mailto:",
    "http://",
    "https://example.com/",
    "[",
    "]",
    "(",
    ")",
    "](",
    "<",
    ">",
    '"',
    "'",
    "`",
    "```",
    "*",
    "**",
    "_",
    "~~",
    "\\",
    "\n",
    "\n\n",
    " ",
    "\t",
    "- ",
    "1. ",
    "# ",
    "> ",
    "onerror=",
    "a",
    "b",
    "\u2028",
    "\u0000",
    "|",
    " | ",
    "\\|",
    "| --- |",
    ":-:",
    "| a | b |\n| - | - |\n",
]


@pytest_asyncio.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as launched:
        yield launched


@pytest_asyncio.fixture(scope="module")
async def site() -> AsyncIterator[str]:
    async with renderer_site() as url:
        yield url


@pytest_asyncio.fixture
async def tab(browser: Browser, site: str) -> AsyncIterator[RendererPage]:
    page = await RendererPage.open(browser, site)
    yield page
    await page.close()


@pytest.mark.parametrize("build", CRAFTED.values(), ids=CRAFTED.keys())
async def test_a_32_kb_answer_crafted_to_make_the_renderer_read_it_again_per_delimiter_costs_linear_work(
    tab: RendererPage, build: Callable[[int], str]
) -> None:
    half = await tab.render(build(16 * KB))
    full = await tab.render(build(32 * KB))

    costs: dict[str, Work] = {"16 KB": half, "32 KB": full}
    assert full.total <= WORK_PER_CHARACTER * 32 * KB, costs
    # Twice the text, twice the work: not four times, as reading on to the end for each delimiter takes.
    assert full.total <= 2.5 * half.total, costs


@pytest.mark.parametrize(("markdown", "html"), EVERYDAY, ids=[markdown[:30] for markdown, _ in EVERYDAY])
async def test_everyday_markdown_renders_as_it_did_before_the_renderer_was_made_linear(
    tab: RendererPage, markdown: str, html: str
) -> None:
    assert await tab.render_html(markdown) == html


@pytest.mark.parametrize(("markdown", "html"), TABLES, ids=[markdown[:30] for markdown, _ in TABLES])
async def test_a_pipe_table_renders_as_a_table_with_markdown_in_its_cells(
    tab: RendererPage, markdown: str, html: str
) -> None:
    assert await tab.render_html(markdown) == html


async def test_markdown_crafted_to_smuggle_html_or_a_script_link_renders_as_inert_text(tab: RendererPage) -> None:
    requests: list[str] = []
    tab.page.on("request", lambda request: requests.append(request.url))
    dialogs: list[str] = []
    tab.page.on("dialog", lambda dialog: dialogs.append(dialog.message))

    wrong = await tab.uninert([text for text, _ in SMUGGLED.values()])

    assert wrong == {}
    for name, (text, shown) in SMUGGLED.items():
        html = await tab.render_html(text)
        assert shown in await tab.page.locator("#out").text_content(), (name, html)
    assert await tab.page.evaluate("window.__xss") is None
    assert dialogs == []
    assert requests == [], requests  # an element that loads something (img, iframe) would have asked for it


async def test_random_texts_made_of_attack_pieces_never_render_a_live_element_or_an_unsafe_link(
    tab: RendererPage,
) -> None:
    draw = random.Random(19)
    texts = ["".join(draw.choices(FRAGMENTS, k=draw.randint(1, 30))) for _ in range(3000)]

    wrong = await tab.uninert(texts)

    assert wrong == {}
    assert await tab.page.evaluate("window.__xss") is None
