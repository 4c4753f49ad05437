"""HTML: the main text without page chrome or scripts, one line per block, tables one row per line."""

from __future__ import annotations

import pytest

from rag.errors import NoTextFound
from rag.ingest.extract import extract

PAGE = b"""<!doctype html>
<html>
<head><title>  Returns   help </title><style>p { color: red }</style><script>var tracking = 1;</script></head>
<body>
  <header>Shop logo</header>
  <nav><a href="/">Home</a> | <a href="/about">About</a></nav>
  <h1>Returns</h1>
  <p>Send it   back
     within <b>30</b> days.<br>Keep the receipt.</p>
  <table>
    <tr><th>Item</th><th>Days</th></tr>
    <tr><td>Shoes</td><td>30</td></tr>
    <tr><td></td><td></td></tr>
    <tr><td>Hats</td><td>14</td></tr>
  </table>
  <ul><li>Unworn</li><li><p>In the box</p></li></ul>
  <aside>Related: gift cards</aside>
  <noscript>Enable JavaScript</noscript>
  <template><p>hidden template</p></template>
  <!-- a comment -->
  <footer>&copy; 2024 Shop</footer>
  <script>document.write("injected")</script>
</body>
</html>"""


def test_page_text_drops_chrome_and_keeps_blocks_and_tables():
    document = extract(PAGE, filename="returns.html")

    assert document.mime_type == "text/html"
    assert document.title == "Returns help"
    assert document.text == (
        "# Returns\n"
        "Send it back within 30 days.\n"
        "Keep the receipt.\n"
        "| Item | Days |\n"
        "| --- | --- |\n"
        "| Shoes | 30 |\n"
        "| Hats | 14 |\n"
        "- Unworn\n"
        "- In the box"
    )


@pytest.mark.parametrize(
    "dropped", ["tracking", "injected", "Shop logo", "Home", "gift cards", "Enable JavaScript", "hidden", "comment"]
)
def test_page_text_leaves_out(dropped):
    assert dropped not in extract(PAGE, filename="returns.html").text


def test_main_element_is_preferred_over_the_rest_of_the_body():
    page = b"<html><body><div>Sidebar links</div><main><p>The content.</p></main></body></html>"
    assert extract(page, filename="p.html").text == "The content."


def test_article_header_is_kept_while_the_page_header_goes():
    page = b"<html><body><header>Site</header><article><header><h2>Post title</h2></header><p>Body</p></article>"
    assert extract(page, filename="p.html").text == "## Post title\nBody"


def test_preformatted_text_keeps_its_indentation():
    page = b"<html><body><p>Run:</p><pre>def f():\n    return 1\n</pre></body></html>"
    assert extract(page, filename="p.html").text == "Run:\ndef f():\n    return 1"


def test_nested_tables_stay_inside_their_cell():
    page = b"<html><body><table><tr><td>outer</td><td><table><tr><td>in1</td><td>in2</td></tr></table></td></tr>"
    assert extract(page, filename="p.html").text == "| outer | in1 in2 |"


def test_deeply_nested_markup_does_not_exhaust_the_stack():
    page = b"<html><body>" + b"<div>" * 5000 + b"deep" + b"</div>" * 5000 + b"</body></html>"
    assert extract(page, filename="p.html").text == "deep"


def test_declared_charset_is_honoured():
    page = '<html><head><meta charset="gbk"><title>帮助</title></head><body><p>退货政策</p></body></html>'
    document = extract(page.encode("gbk"), filename="p.html")
    assert (document.title, document.text) == ("帮助", "退货政策")


def test_a_wrong_declared_charset_falls_back_to_detection():
    page = '<html><head><meta charset="no-such-charset"></head><body><p>naïve café</p></body></html>'
    assert extract(page.encode(), filename="p.html").text == "naïve café"


def test_a_page_with_only_scripts_has_no_text():
    page = b"<!doctype html><html><body><div id=app></div><script>render()</script></body></html>"
    with pytest.raises(NoTextFound, match="built by JavaScript"):
        extract(page, filename="app.html")


def test_text_declared_as_html_but_without_markup_is_kept_as_it_is():
    document = extract(b"index.html", content_type="text/html")
    assert (document.mime_type, document.text) == ("text/html", "index.html")


def test_a_table_row_is_one_pipe_row_with_a_pipe_in_a_cell_escaped():
    page = b"<html><body><table><tr><th>Command</th><th>Use</th></tr><tr><td>a | b</td><td>pipe</td></tr></table>"
    assert extract(page, filename="p.html").text == "| Command | Use |\n| --- | --- |\n| a \\| b | pipe |"
