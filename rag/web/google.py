"""Google Programmable Search through the Custom Search JSON API (an API key and a search engine id, `cx`).

Format from Google's reference (developers.google.com/custom-search/v1/reference/rest/v1/Search): a 200 answer is
`{"kind": "customsearch#search", …, "items": [{"kind": "customsearch#result", "title", "link", "displayLink",
"snippet", …}]}` with `items` absent when nothing matched; errors are `{"error": {"code", "message", "status"}}`.
"""

from __future__ import annotations

import json

import aiohttp

from rag.web.http import ProviderLimits, get_text
from rag.web.types import WebResult, WebSearchError

API_URL = "https://www.googleapis.com/customsearch/v1"
# The API's own cap on `num` (results per request).
_MAX_NUM = 10


class GoogleSearch:
    """Asks the Custom Search JSON API for one page of results."""

    name = "google"

    def __init__(
        self,
        session: aiohttp.ClientSession,
        limits: ProviderLimits,
        *,
        api_key: str,
        engine_id: str,
        api_url: str = API_URL,
    ) -> None:
        self._session = session
        self._limits = limits
        self._api_key = api_key
        self._engine_id = engine_id
        self._api_url = api_url

    async def search(self, query: str) -> list[WebResult]:
        """The first page's items."""
        params = {
            "key": self._api_key,
            "cx": self._engine_id,
            "q": query,
            "num": str(min(_MAX_NUM, self._limits.max_results)),
        }
        body = await get_text(self._session, self._api_url, params, self._limits, provider="google")
        return parse_search(body, self._limits.max_results)


def parse_search(body: str, limit: int) -> list[WebResult]:
    """The items of a Custom Search answer, at most `limit`; WebSearchError when it is not one."""
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise WebSearchError("google answered something other than JSON", failure="unparseable") from exc
    if not isinstance(data, dict) or not isinstance(data.get("items", []), list):
        raise WebSearchError("google answered JSON without a list of items", failure="unparseable")
    found: list[WebResult] = []
    for item in data.get("items", []):
        if len(found) >= limit:
            break
        if not isinstance(item, dict):
            continue
        link, title, snippet = item.get("link"), item.get("title"), item.get("snippet")
        if isinstance(link, str) and link.startswith(("http://", "https://")):
            found.append(
                WebResult(
                    link,
                    " ".join(title.split()) if isinstance(title, str) and title.strip() else link,
                    " ".join(snippet.split()) if isinstance(snippet, str) else "",
                )
            )
    return found
