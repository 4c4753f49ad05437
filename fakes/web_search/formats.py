"""The providers' answers in their real formats, rendered from a list of results.

DuckDuckGo's HTML results page: the markup html.duckduckgo.com/html/ serves (no official documentation exists;
this is the structure the open parsers duckduckgo_search, searxng and many agents read, seen in their test
fixtures): one `div.result.results_links.results_links_deep.web-result` per result with `a.result__a` (href
through DuckDuckGo's redirect, the target in `uddg`), `a.result__url` and `a.result__snippet`; an ad has
`result--ad`; a page with no results has `div.no-results`.
Instant Answer: the JSON of https://api.duckduckgo.com/?q=…&format=json (duckduckgo.com/api).
Google: the Search resource of the Custom Search JSON API
(developers.google.com/custom-search/v1/reference/rest/v1/Search) and Google's error shape.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit


@dataclass(frozen=True, slots=True)
class Hit:
    """One result the fake serves."""

    url: str
    title: str
    snippet: str


_PAGE_HEAD = """<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN" "http://www.w3.org/TR/html4/loose.dtd">
<html>
<head>
  <meta http-equiv="content-type" content="text/html; charset=UTF-8">
  <meta name="referrer" content="origin">
  <title>{query} at DuckDuckGo</title>
  <link rel="stylesheet" href="/dist/h.css" type="text/css">
</head>
<body>
<div id="links_wrapper">
<div class="serp__results">
<div id="links" class="results">
"""

_AD = """<div class="result results_links results_links_deep result--ad ">
  <div class="links_main links_deep result__body">
    <h2 class="result__title">
      <a rel="nofollow" class="result__a"
        href="https://duckduckgo.com/y.js?ad_domain=ads.example&amp;ad_provider=bingv7aa">Sponsored <b>offer</b></a>
    </h2>
    <a class="result__snippet" href="https://duckduckgo.com/y.js?ad_domain=ads.example">An advert, not a result.</a>
  </div>
</div>
"""

_RESULT = """<div class="result results_links results_links_deep web-result ">
  <div class="links_main links_deep result__body">
    <h2 class="result__title">
      <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg={uddg}&amp;rut=3f6c2a9e1b">{title}</a>
    </h2>
    <div class="result__extras">
      <div class="result__extras__url">
        <span class="result__icon"><a rel="nofollow" href="{href}"><img class="result__icon__img" width="16" height="16"
          alt="" src="//external-content.duckduckgo.com/ip3/{host}.ico" name="i15"></a></span>
        <a class="result__url" href="//duckduckgo.com/l/?uddg={uddg}&amp;rut=3f6c2a9e1b">{host}</a>
      </div>
    </div>
    <a class="result__snippet" href="//duckduckgo.com/l/?uddg={uddg}&amp;rut=3f6c2a9e1b">{snippet}</a>
    <div class="clear"></div>
  </div>
</div>
"""

_NO_RESULTS = """<div class="no-results">No results.</div>
"""

# Pages DuckDuckGo's address may answer with that hold no results markup: a bot check, an error, a JSON blob.
GARBAGE_HTML_PAGES = (
    "<html><head><title>Sorry</title></head><body><p>Please enable JavaScript.</p></body></html>",
    "<html><body><form id='challenge-form'><div class='anomaly-modal'>Select all squares</div></form></body></html>",
    '{"error": "rate limited"}',
    "",
)

_PAGE_TAIL = """</div>
</div>
</div>
</body>
</html>
"""


def _bold(text: str, query: str) -> str:
    """The snippet escaped, the query's words in <b> as DuckDuckGo marks them."""
    escaped = html.escape(text, quote=False)
    for word in {w for w in query.split() if len(w) > 3}:
        escaped = escaped.replace(word, f"<b>{word}</b>")
    return escaped


def results_page(query: str, hits: Sequence[Hit], *, with_ad: bool = True) -> str:
    """DuckDuckGo's HTML results page for `query` listing `hits`."""
    parts = [_PAGE_HEAD.format(query=html.escape(query))]
    if with_ad and hits:
        parts.append(_AD)
    for hit in hits:
        parts.append(
            _RESULT.format(
                uddg=quote(hit.url, safe=""),
                href=html.escape(hit.url),
                host=html.escape(urlsplit(hit.url).netloc),
                title=_bold(hit.title, query),
                snippet=_bold(hit.snippet, query),
            )
        )
    if not hits:
        parts.append(_NO_RESULTS)
    parts.append(_PAGE_TAIL)
    return "".join(parts)


def instant_answer(hits: Sequence[Hit], heading: str = "") -> dict[str, Any]:
    """An Instant Answer: the first hit as the abstract, the rest as related topics (one in a named group)."""
    first, rest = (hits[0], hits[1:]) if hits else (None, [])
    topics: list[dict[str, Any]] = [
        {
            "FirstURL": hit.url,
            "Icon": {"Height": "", "URL": "", "Width": ""},
            "Result": f'<a href="{html.escape(hit.url)}">{html.escape(hit.title)}</a>{html.escape(hit.snippet)}',
            "Text": f"{hit.title} - {hit.snippet}",
        }
        for hit in rest[:-1]
    ]
    if rest:
        last = rest[-1]
        topics.append(
            {
                "Name": "See also",
                "Topics": [
                    {
                        "FirstURL": last.url,
                        "Icon": {"Height": "", "URL": "", "Width": ""},
                        "Result": f'<a href="{html.escape(last.url)}">{html.escape(last.title)}</a>',
                        "Text": f"{last.title} - {last.snippet}",
                    }
                ],
            }
        )
    return {
        "Abstract": first.snippet if first else "",
        "AbstractSource": "Wikipedia" if first else "",
        "AbstractText": first.snippet if first else "",
        "AbstractURL": first.url if first else "",
        "Answer": "",
        "AnswerType": "",
        "Definition": "",
        "DefinitionSource": "",
        "DefinitionURL": "",
        "Entity": "",
        "Heading": heading or (first.title if first else ""),
        "Image": "",
        "ImageHeight": 0,
        "ImageIsLogo": 0,
        "ImageWidth": 0,
        "Infobox": "",
        "Redirect": "",
        "RelatedTopics": topics,
        "Results": [],
        "Type": "A" if first else "",
        "meta": {"id": "wikipedia_fathead", "name": "Wikipedia", "src_domain": "en.wikipedia.org"},
    }


def google_search(query: str, engine_id: str, hits: Sequence[Hit]) -> dict[str, Any]:
    """A Custom Search JSON API answer: `items` only when something matched, as the API does."""
    request = {
        "title": f"Google Custom Search - {query}",
        "totalResults": str(len(hits)),
        "searchTerms": query,
        "count": len(hits),
        "startIndex": 1,
        "inputEncoding": "utf8",
        "outputEncoding": "utf8",
        "safe": "off",
        "cx": engine_id,
    }
    answer: dict[str, Any] = {
        "kind": "customsearch#search",
        "url": {
            "type": "application/json",
            "template": "https://www.googleapis.com/customsearch/v1?q={searchTerms}&num={count?}&start={startIndex?}"
            "&cx={cx?}&alt=json",
        },
        "queries": {"request": [request]},
        "context": {"title": "ragbot test engine"},
        "searchInformation": {
            "searchTime": 0.21,
            "formattedSearchTime": "0.21",
            "totalResults": str(len(hits)),
            "formattedTotalResults": f"{len(hits):,}",
        },
    }
    if hits:
        answer["items"] = [
            {
                "kind": "customsearch#result",
                "title": hit.title,
                "htmlTitle": html.escape(hit.title),
                "link": hit.url,
                "displayLink": urlsplit(hit.url).netloc,
                "snippet": hit.snippet,
                "htmlSnippet": html.escape(hit.snippet),
                "formattedUrl": hit.url,
                "htmlFormattedUrl": html.escape(hit.url),
            }
            for hit in hits
        ]
    return answer


def google_error(status: int, message: str, reason: str) -> dict[str, Any]:
    """Google's error body (code, message, errors[], status)."""
    state = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED"}.get(status, "UNKNOWN")
    return {
        "error": {
            "code": status,
            "message": message,
            "errors": [{"message": message, "domain": "global", "reason": reason}],
            "status": state,
        }
    }
