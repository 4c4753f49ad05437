"""DuckDuckGo without a key: the HTML results page first, the Instant Answer API when the page yields nothing.

Formats as DuckDuckGo serves them (no official documentation exists for the HTML page; the markup below is what
html.duckduckgo.com/html/ returns and what open parsers such as duckduckgo_search and searxng read):
a result is `<div class="result results_links results_links_deep web-result">` holding
`<a class="result__a" href="//duckduckgo.com/l/?uddg=<the URL, percent-encoded>&amp;rut=…">title</a>` and
`<a class="result__snippet" href="…">snippet with <b>bold</b></a>`; ads carry `result--ad` and link to `y.js`.
The Instant Answer API (https://api.duckduckgo.com/?q=…&format=json, documented at duckduckgo.com/api) answers
`AbstractText`/`AbstractURL`/`Heading`, `Results[]` and `RelatedTopics[]` of `{FirstURL, Text}` or of
`{Name, Topics: […]}` groups.
"""

from __future__ import annotations

import json
import logging
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

import aiohttp

from rag.web.http import ProviderLimits, get_text
from rag.web.types import WebResult, WebSearchError

log = logging.getLogger(__name__)

HTML_URL = "https://html.duckduckgo.com/html/"
INSTANT_ANSWER_URL = "https://api.duckduckgo.com/"


class DuckDuckGo:
    """Searches DuckDuckGo's HTML page, falling back to the Instant Answer API when the page fails or is empty."""

    name = "duckduckgo"

    def __init__(
        self,
        session: aiohttp.ClientSession,
        limits: ProviderLimits,
        *,
        html_url: str = HTML_URL,
        instant_answer_url: str = INSTANT_ANSWER_URL,
    ) -> None:
        self._session = session
        self._limits = limits
        self._html_url = html_url
        self._instant_answer_url = instant_answer_url

    async def search(self, query: str) -> list[WebResult]:
        """The results page's results; the Instant Answer's when the page fails or holds none."""
        try:
            page = await get_text(self._session, self._html_url, {"q": query}, self._limits, provider="duckduckgo")
            results = parse_results_page(page, self._limits.max_results)
            if results:
                return results
            log.debug("web_search provider=duckduckgo page=empty fallback=instant_answer")
        except WebSearchError as exc:
            if exc.failure == "status" and exc.retry_after is not None:
                raise  # rate limited: the API is DuckDuckGo's too, and asking it at once would only add to that
            log.debug("web_search provider=duckduckgo page=%s fallback=instant_answer", exc.failure)
        params = {"q": query, "format": "json", "no_html": "1", "skip_disambig": "1"}
        answer = await get_text(
            self._session, self._instant_answer_url, params, self._limits, provider="duckduckgo instant answer"
        )
        return parse_instant_answer(answer, self._limits.max_results)


def parse_results_page(page: str, limit: int) -> list[WebResult]:
    """The organic results of an HTML results page, at most `limit`; WebSearchError when it is no results page."""
    parser = _ResultsPage(limit)
    parser.feed(page)
    parser.close()
    if not parser.results and not parser.recognised:
        raise WebSearchError("duckduckgo sent a page without its results markup", failure="unparseable")
    return parser.results


def parse_instant_answer(body: str, limit: int) -> list[WebResult]:
    """The abstract, results and related topics of an Instant Answer, at most `limit`."""
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise WebSearchError("duckduckgo instant answer was not JSON", failure="unparseable") from exc
    if not isinstance(data, dict):
        raise WebSearchError("duckduckgo instant answer was not a JSON object", failure="unparseable")
    found: list[WebResult] = []
    abstract, abstract_url = data.get("AbstractText"), data.get("AbstractURL")
    if isinstance(abstract, str) and abstract and isinstance(abstract_url, str) and abstract_url:
        heading = data.get("Heading")
        found.append(WebResult(abstract_url, heading if isinstance(heading, str) else abstract_url, abstract))
    for topic in _topics(data.get("Results")) + _topics(data.get("RelatedTopics")):
        if len(found) >= limit:
            break
        found.append(topic)
    return found[:limit]


def _topics(items: object) -> list[WebResult]:
    """`{FirstURL, Text}` entries, with `{Name, Topics}` groups flattened (one level, as the API nests them)."""
    if not isinstance(items, list):
        return []
    found = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("Topics"), list):
            found += _topics(item["Topics"])
            continue
        url, text = item.get("FirstURL"), item.get("Text")
        if isinstance(url, str) and url and isinstance(text, str):
            # The topic's text opens with its title ("Python (programming language) A high-level …").
            found.append(WebResult(url, text.split(" - ", 1)[0][:120], text))
    return found


def result_url(href: str) -> str | None:
    """The destination of a result link: the `uddg` parameter of DuckDuckGo's redirect, or the link itself."""
    if href.startswith("//"):
        href = "https:" + href
    parts = urlsplit(href)
    if parts.path == "/l/" and parts.netloc.endswith("duckduckgo.com"):
        target = parse_qs(parts.query).get("uddg", [""])[0]
        return target if target.startswith(("http://", "https://")) else None
    if parts.netloc.endswith("duckduckgo.com"):
        return None  # an ad (y.js) or DuckDuckGo's own page
    return href if parts.scheme in ("http", "https") else None


# HTML's void elements have no end tag, so they do not nest (WHATWG HTML, "void elements").
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)


class _ResultsPage(HTMLParser):
    """Collects result__a links and result__snippet texts, in page order."""

    def __init__(self, limit: int) -> None:
        super().__init__(convert_charrefs=True)
        self.results: list[WebResult] = []
        # Whether the page has DuckDuckGo's results markup at all (an empty results page still has it).
        self.recognised = False
        self._limit = limit
        self._field: str | None = None
        self._depth = 0
        self._url: str | None = None
        self._title: list[str] = []
        self._snippet: list[str] = []
        self._ad = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._field is not None:
            if tag not in _VOID:
                self._depth += 1
            return
        classes = (dict(attrs).get("class") or "").split()
        if "results" in classes or "serp__results" in classes or "no-results" in classes:
            self.recognised = True
        if "result" in classes:
            self._flush()
            self._ad = "result--ad" in classes
        elif "result__a" in classes:
            self._flush()
            self.recognised = True
            self._url = result_url(dict(attrs).get("href") or "")
            self._field, self._depth = "title", 0
        elif "result__snippet" in classes and self._url is not None:
            self._field, self._depth = "snippet", 0

    def handle_endtag(self, tag: str) -> None:
        if self._field is None or tag in _VOID:
            return
        if self._depth == 0:
            self._field = None
        else:
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._field == "title":
            self._title.append(data)
        elif self._field == "snippet":
            self._snippet.append(data)

    def close(self) -> None:
        super().close()
        self._flush()

    def _flush(self) -> None:
        if self._url is not None and not self._ad and len(self.results) < self._limit:
            title = " ".join("".join(self._title).split())
            self.results.append(WebResult(self._url, title or self._url, " ".join("".join(self._snippet).split())))
        self._url, self._title, self._snippet = None, [], []
