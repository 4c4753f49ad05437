"""The web search leg as the settings configure it, or None when WEB_SEARCH_PROVIDER is off."""

from __future__ import annotations

from functools import partial

import aiohttp

from bot.app.settings import Settings
from rag.ingest.addresses import AddressPolicy
from rag.lexical import LexicalAnalyzer
from rag.ports import Embedder
from rag.web.blacklist import Blacklist
from rag.web.duckduckgo import DuckDuckGo
from rag.web.google import GoogleSearch
from rag.web.http import ProviderLimits
from rag.web.leg import WebLegConfig, WebSearchLeg
from rag.web.pages import PageLimits, PageReader
from rag.web.types import WebSearchProvider

# Search pages answer browsers; DuckDuckGo's HTML page turns some clients without a User-Agent away.
USER_AGENT = "Mozilla/5.0 (compatible; ragbot web search)"


def web_session() -> aiohttp.ClientSession:
    """The HTTP session the providers are asked through (pages are read through the SSRF-checked fetcher)."""
    return aiohttp.ClientSession(headers={"User-Agent": USER_AGENT})


def build_web_leg(
    settings: Settings, session: aiohttp.ClientSession, embedder: Embedder, lexical: LexicalAnalyzer
) -> WebSearchLeg | None:
    """The leg over the configured provider; None when web search is off."""
    provider = _provider(settings, session)
    if provider is None:
        return None
    blacklist = Blacklist.parse(settings.WEB_SEARCH_BLACKLIST)
    pages = PageReader(
        PageLimits(
            pages=settings.WEB_SEARCH_FETCH_PAGES,
            max_bytes=settings.WEB_SEARCH_PAGE_MAX_KB * 1000,
            timeout=settings.WEB_SEARCH_PAGE_TIMEOUT,
        ),
        blacklist,
        AddressPolicy.allowing(*settings.URL_FETCH_ALLOWED_NETWORKS.split(",")),
    )
    return WebSearchLeg(
        provider,
        blacklist,
        embedder,
        partial(lexical.tokens, remember=False),
        pages=pages,
        config=WebLegConfig(
            references=settings.WEB_SEARCH_REFERENCES,
            passages=2 * settings.WEB_SEARCH_REFERENCES,
            # The results page, its fallback and the page reads (in parallel), one after the other at worst.
            deadline=2 * settings.WEB_SEARCH_TIMEOUT + settings.WEB_SEARCH_PAGE_TIMEOUT,
        ),
    )


def _provider(settings: Settings, session: aiohttp.ClientSession) -> WebSearchProvider | None:
    limits = ProviderLimits(timeout=settings.WEB_SEARCH_TIMEOUT, max_results=settings.WEB_SEARCH_MAX_RESULTS)
    if settings.WEB_SEARCH_PROVIDER == "duckduckgo":
        return DuckDuckGo(
            session,
            limits,
            html_url=settings.WEB_SEARCH_DUCKDUCKGO_URL,
            instant_answer_url=settings.WEB_SEARCH_DUCKDUCKGO_API_URL,
        )
    if settings.WEB_SEARCH_PROVIDER == "google" and settings.GOOGLE_SEARCH_API_KEY is not None:
        return GoogleSearch(
            session,
            limits,
            api_key=settings.GOOGLE_SEARCH_API_KEY.get_secret_value(),
            engine_id=settings.GOOGLE_SEARCH_ENGINE_ID,
            api_url=settings.WEB_SEARCH_GOOGLE_URL,
        )
    return None
