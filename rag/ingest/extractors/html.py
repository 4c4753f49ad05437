"""HTML to readable text: drops page chrome and scripts, keeps block breaks, headings, lists and tables."""

from __future__ import annotations

import codecs
import logging
import re
from dataclasses import dataclass

from bs4 import BeautifulSoup
from bs4.element import Comment, Declaration, Doctype, NavigableString, ProcessingInstruction, Tag

from rag.ingest.extractors.tabular import pipe_rows
from rag.ingest.extractors.text import DecodedText, decode_text
from rag.ingest.types import ExtractedDocument, Section

logger = logging.getLogger(__name__)

# Never content: code, styling, navigation and page furniture.
_DROPPED = (
    "script",
    "style",
    "nav",
    "aside",
    "noscript",
    "template",
    "head",
    "svg",
    "canvas",
    "iframe",
    "object",
    "button",
    "select",
)
# A page's <header>/<footer> is furniture; inside an <article> or <main> it holds the article's own title or notes.
_PAGE_CHROME = ("header", "footer")
_BLOCKS = frozenset(
    {
        *("address", "article", "blockquote", "body", "caption", "center", "dd", "details", "dialog", "div"),
        *("dl", "dt", "fieldset", "figcaption", "figure", "form", "header", "footer", "hgroup", "hr", "html"),
        *("h1", "h2", "h3", "h4", "h5", "h6", "legend", "li", "main", "menu", "ol", "p", "section", "summary", "ul"),
    }
)
_HEADING_LEVELS = {f"h{level}": level for level in range(1, 7)}
_WHITESPACE = re.compile(r"\s+")
_SKIPPED_STRINGS = (Comment, Declaration, Doctype, ProcessingInstruction)
_DECLARED_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""")


@dataclass(frozen=True, slots=True)
class _Break:
    """A line break: an opening one may start the next line with a prefix ('# ', '- '), a closing one ends it."""

    prefix: str = ""
    opening: bool = False


@dataclass(frozen=True, slots=True)
class _Preformatted:
    """Text from <pre>, kept with its own spacing."""

    text: str


def decode_markup(data: bytes, fallback: DecodedText | None = None) -> str | None:
    """HTML or XHTML bytes as text: the charset the markup declares, else the detected encoding."""
    declared = _declared_encoding(data)
    if declared is not None:
        try:
            return data.decode(declared)
        except UnicodeDecodeError:
            logger.warning("html_charset_wrong declared=%s", declared)
    decoded = fallback or decode_text(data)
    return None if decoded is None else decoded.text


def _declared_encoding(data: bytes) -> str | None:
    """The codec a <meta charset> or an XML declaration names, if Python knows it."""
    match = _DECLARED_CHARSET.search(data[:4096]) or _XML_ENCODING.search(data[:256])
    if match is None:
        return None
    try:
        return codecs.lookup(match.group(1).decode("ascii")).name
    except LookupError:
        return None


def html_to_text(markup: str) -> tuple[str, str]:
    """The page's (title, main text): <main> when the page has one, else the whole body."""
    if "<" not in markup:
        return "", markup  # no markup at all (a mislabelled text file); BeautifulSoup would only warn about it
    soup = BeautifulSoup(markup, "lxml")
    title = " ".join(soup.title.get_text().split()) if soup.title is not None else ""
    for tag in soup.find_all(_DROPPED):
        if not tag.decomposed:
            tag.decompose()
    for tag in soup.find_all(_PAGE_CHROME):
        if not tag.decomposed and tag.find_parent(("article", "main")) is None:
            tag.decompose()
    main = soup.find("main")
    root = main if isinstance(main, Tag) and main.get_text(strip=True) else soup
    return title, _render(root)


def extract_html(markup: str, mime_type: str) -> ExtractedDocument:
    """An HTML page as one section, titled by its <title>."""
    title, text = html_to_text(markup)
    return ExtractedDocument(sections=(Section(text),), mime_type=mime_type, title=title)


def _render(root: Tag | BeautifulSoup) -> str:
    """Walk the tree without recursion (pages nest deeper than Python's stack) into lines of text."""
    pieces: list[str | _Break | _Preformatted] = []
    stack: list[Tag | NavigableString | _Break] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, _Break):
            pieces.append(node)
        elif isinstance(node, NavigableString):
            if not isinstance(node, _SKIPPED_STRINGS):
                pieces.append(str(node))
        elif node.name == "br":
            pieces.append(_Break())
        elif node.name == "table":
            pieces.extend((_Break(), _Preformatted(_table_text(node)), _Break()))
        elif node.name == "pre":
            pieces.extend((_Break(), _Preformatted(node.get_text()), _Break()))
        elif node.name in _BLOCKS:
            stack.append(_Break())
            stack.extend(_children_reversed(node))
            stack.append(_Break(_prefix(node.name), opening=True))
        else:
            stack.extend(_children_reversed(node))
    return _join(pieces)


def _children_reversed(tag: Tag) -> list[Tag | NavigableString]:
    return [child for child in reversed(tag.contents) if isinstance(child, Tag | NavigableString)]


def _prefix(name: str) -> str:
    if name in _HEADING_LEVELS:
        return "#" * _HEADING_LEVELS[name] + " "
    return "- " if name == "li" else ""


def _join(pieces: list[str | _Break | _Preformatted]) -> str:
    lines: list[str] = []
    current: list[str] = []
    prefix = ""

    def flush() -> None:
        nonlocal prefix
        text = _WHITESPACE.sub(" ", "".join(current)).strip()
        current.clear()
        if text:
            lines.append(prefix + text)
            prefix = ""

    for piece in pieces:
        if isinstance(piece, _Break):
            flush()
            # <li><p>text</p></li> opens twice before any text: the prefixes add up.
            prefix = prefix + piece.prefix if piece.opening else ""
        elif isinstance(piece, _Preformatted):
            flush()
            block = "\n".join(line.rstrip() for line in piece.text.strip("\n").splitlines())
            if block.strip():
                lines.append(block)
        else:
            current.append(piece)
    flush()
    return "\n".join(lines)


def _table_text(table: Tag) -> str:
    """One Markdown pipe row per row (the first the header); rows of nested tables stay inside their own cell."""
    rows: list[list[str]] = []
    for row in table.find_all("tr"):
        if row.find_parent("table") is not table:
            continue
        cells = [" ".join(cell.get_text(" ").split()) for cell in row.find_all(("td", "th"), recursive=False)]
        if any(cells):
            rows.append(cells)
    return "\n".join(pipe_rows(rows))
