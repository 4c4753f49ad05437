"""A result's page text, fetched through ragbot's SSRF-checked fetcher with web search's own smaller limits."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from rag.errors import ExtractionError
from rag.ingest.addresses import PUBLIC_ONLY, AddressPolicy
from rag.ingest.extractors.html import decode_markup, html_to_text
from rag.ingest.fetch import FetchLimits, fetch_url
from rag.web.blacklist import Blacklist

log = logging.getLogger(__name__)

_TEXT_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/plain"})


@dataclass(frozen=True, slots=True)
class PageLimits:
    """How many of the top results have their pages read, and what one read may cost."""

    pages: int = 3
    max_bytes: int = 1_000_000
    timeout: float = 4.0
    # Page text kept per result (four passages): each passage costs ~0.1 s to embed with the local model on two
    # cores (measured: 25 passages of 800 characters in 2.9 s), so three pages of this are ~1.5 s, whole pages ~10 s.
    max_chars: int = 3_200


class PageReader:
    """Reads result pages: public addresses only, every redirect hop checked against the blacklist."""

    def __init__(self, limits: PageLimits, blacklist: Blacklist, policy: AddressPolicy = PUBLIC_ONLY) -> None:
        self._limits = limits
        self._blacklist = blacklist
        self._policy = policy
        self._fetch = FetchLimits(
            max_bytes=limits.max_bytes,
            total_timeout=limits.timeout,
            connect_timeout=limits.timeout,
            read_idle_timeout=limits.timeout,
            max_redirects=3,
        )

    @property
    def pages(self) -> int:
        """How many results have their pages read."""
        return self._limits.pages

    async def text(self, url: str) -> str:
        """The page's main text; "" when it cannot be read (behind a login, too big, slow, refused, not HTML)."""
        try:
            fetched = await fetch_url(url, limits=self._fetch, policy=self._policy, allowed=self._allowed)
        except ExtractionError as exc:
            log.info("web_page=skipped reason=%s", exc.reason)
            return ""
        if fetched.content_type not in _TEXT_TYPES:
            return ""
        markup = decode_markup(fetched.data) or ""
        _, text = await asyncio.to_thread(html_to_text, markup)
        return text[: self._limits.max_chars]

    def _allowed(self, url: str) -> bool:
        return not self._blacklist.blocks(url)
