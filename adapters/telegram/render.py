"""Markdown as Telegram shows it: Telegram's HTML subset, valid even for half-written text (every tag closed)."""

from __future__ import annotations

import html
import re
from typing import Final

# Inline spans, tried in this order at each position; a marker without its closing twin stays literal text.
_INLINE: Final = re.compile(
    r"(?P<code>`[^`\n]+`)"
    r"|(?P<link>\[(?P<label>[^\]\n]+)\]\((?P<url>[^)\s]+)\))"
    r"|(?P<bold>\*\*(?=\S)(?P<bold_text>.+?)(?<=\S)\*\*)"
    r"|(?P<bold2>__(?=\S)(?P<bold2_text>.+?)(?<=\S)__)"
    r"|(?P<italic>(?<![\w*])\*(?=\S)(?P<italic_text>[^*\n]+?)(?<=\S)\*(?![\w*]))"
    r"|(?P<italic2>(?<![\w_])_(?=\S)(?P<italic2_text>[^_\n]+?)(?<=\S)_(?![\w_]))"
    r"|(?P<strike>~~(?=\S)(?P<strike_text>.+?)(?<=\S)~~)"
)
_FENCE: Final = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
_HEADING: Final = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET: Final = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_QUOTE: Final = re.compile(r"^ {0,3}>\s?(.*)$")
_SAFE_URL: Final = re.compile(r"^(https?://|mailto:|tg://)", re.IGNORECASE)


def _inline(text: str) -> str:
    out: list[str] = []
    position = 0
    for match in _INLINE.finditer(text):
        out.append(html.escape(text[position : match.start()], quote=False))
        position = match.end()
        if match.group("code"):
            out.append(f"<code>{html.escape(match.group('code')[1:-1], quote=False)}</code>")
        elif match.group("link"):
            label, url = match.group("label"), match.group("url")
            if _SAFE_URL.match(url):
                out.append(f'<a href="{html.escape(url, quote=True)}">{_inline(label)}</a>')
            else:
                out.append(html.escape(match.group("link"), quote=False))
        else:
            for kind, tag in (("bold", "b"), ("bold2", "b"), ("italic", "i"), ("italic2", "i"), ("strike", "s")):
                if match.group(kind):
                    out.append(f"<{tag}>{_inline(match.group(kind + '_text'))}</{tag}>")
                    break
    out.append(html.escape(text[position:], quote=False))
    return "".join(out)


def to_telegram_html(markdown: str) -> str:
    """Telegram HTML for `markdown` (bold, italic, strike, code, fenced code, links, headings, lists, quotes).

    Made for streaming: an unclosed fence is closed at the end and an unpaired marker shows as itself, so every
    prefix of an answer renders to HTML Telegram accepts.
    """
    lines = markdown.split("\n")
    out: list[str] = []
    fence: str | None = None
    code: list[str] = []
    language = ""
    quote: list[str] = []

    def flush_quote() -> None:
        if quote:
            out.append("<blockquote>" + "\n".join(quote) + "</blockquote>")
            quote.clear()

    for line in lines:
        if fence is not None:
            if line.strip().startswith(fence) and set(line.strip()) == {fence[0]}:
                out.append(_pre(code, language))
                fence, code = None, []
            else:
                code.append(line)
            continue
        opening = _FENCE.match(line)
        if opening:
            flush_quote()
            fence, language = opening.group(1), opening.group(2)
            continue
        quoted = _QUOTE.match(line)
        if quoted:
            quote.append(_inline(quoted.group(1)))
            continue
        flush_quote()
        heading = _HEADING.match(line)
        bullet = _BULLET.match(line)
        if heading:
            out.append(f"<b>{_inline(heading.group(1))}</b>")
        elif bullet:
            out.append(f"{bullet.group(1)}• {_inline(bullet.group(2))}")
        else:
            out.append(_inline(line))
    flush_quote()
    if fence is not None:
        out.append(_pre(code, language))
    return "\n".join(out)


def _pre(code: list[str], language: str) -> str:
    body = html.escape("\n".join(code), quote=False)
    if language:
        return f'<pre><code class="language-{html.escape(language, quote=True)}">{body}</code></pre>'
    return f"<pre>{body}</pre>"
