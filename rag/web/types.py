"""What a web search brings back, and how it fails."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rag.errors import RagError


@dataclass(frozen=True, slots=True)
class WebResult:
    """One search result: the page's address, its title and the provider's snippet (plain text)."""

    url: str
    title: str
    snippet: str


class WebSearchError(RagError):
    """A provider could not be asked or its answer not read; `failure` names why (timeout, status, unparseable).

    Operators read it in the log; nobody in a chat does (the answer comes from the knowledge base alone).
    """

    def __init__(self, message: str, *, failure: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.failure = failure
        self.retry_after = retry_after


class WebSearchProvider(Protocol):
    """A search engine asked with one query (met by DuckDuckGo and GoogleSearch)."""

    name: str

    async def search(self, query: str) -> list[WebResult]:
        """At most the provider's cap of results, best first; WebSearchError when it fails."""
        ...
