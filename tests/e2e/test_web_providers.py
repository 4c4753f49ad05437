"""The providers and the page reader against FakeWebSearch, a local server speaking their real formats."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio

from fakes.web_search.formats import Hit
from fakes.web_search.server import MANY, FakeWebSearch
from rag.ingest.addresses import AddressPolicy
from rag.web.blacklist import Blacklist
from rag.web.duckduckgo import DuckDuckGo
from rag.web.google import GoogleSearch
from rag.web.http import ProviderLimits
from rag.web.pages import PageLimits, PageReader
from rag.web.types import WebResult, WebSearchError

HITS = [
    Hit("https://docs.python.org/3/whatsnew/3.13.html", "What's New In Python 3.13", "The free-threaded build."),
    Hit("https://peps.python.org/pep-0703/", "PEP 703", "Making the Global Interpreter Lock optional."),
]
LIMITS = ProviderLimits(timeout=1.0, max_bytes=200_000, max_results=5)
LOOPBACK = AddressPolicy.allowing("127.0.0.0/8")


@pytest_asyncio.fixture
async def fake() -> AsyncIterator[FakeWebSearch]:
    async with FakeWebSearch() as server:
        server.serve(HITS)
        yield server


@pytest_asyncio.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


def _ddg(fake: FakeWebSearch, session: aiohttp.ClientSession) -> DuckDuckGo:
    return DuckDuckGo(session, LIMITS, html_url=fake.html_url, instant_answer_url=fake.instant_answer_url)


def _google(fake: FakeWebSearch, session: aiohttp.ClientSession, key: str = "test-key") -> GoogleSearch:
    return GoogleSearch(session, LIMITS, api_key=key, engine_id=fake.engine_id, api_url=fake.google_url)


EXPECTED = [WebResult(hit.url, hit.title, hit.snippet) for hit in HITS]


async def test_duckduckgo_reads_its_results_page_and_asks_nothing_else(fake: FakeWebSearch, session) -> None:  # type: ignore[no-untyped-def]
    assert await _ddg(fake, session).search("python gil") == EXPECTED
    assert [s.endpoint for s in fake.searches] == ["html"]
    assert fake.searches[0].params["q"] == "python gil"


@pytest.mark.parametrize("mode", ["garbage", "slow", "huge"])
async def test_duckduckgo_falls_back_to_the_instant_answer_when_its_page_fails(
    fake: FakeWebSearch, session: aiohttp.ClientSession, mode: str
) -> None:
    fake.set_mode(mode, "html")  # type: ignore[arg-type]
    found = await _ddg(fake, session).search("python gil")
    assert [r.url for r in found] == [hit.url for hit in HITS]
    assert [s.endpoint for s in fake.searches] == ["html", "instant_answer"]


async def test_duckduckgo_falls_back_when_its_page_finds_nothing(fake: FakeWebSearch, session) -> None:  # type: ignore[no-untyped-def]
    fake.serve([])
    assert await _ddg(fake, session).search("zzzz") == []
    assert [s.endpoint for s in fake.searches] == ["html", "instant_answer"]


async def test_a_rate_limited_duckduckgo_is_not_asked_again_through_its_api(fake: FakeWebSearch, session) -> None:  # type: ignore[no-untyped-def]
    fake.set_mode("429", "html")
    with pytest.raises(WebSearchError) as failed:
        await _ddg(fake, session).search("python")
    assert (failed.value.failure, failed.value.retry_after) == ("status", 30.0)
    assert [s.endpoint for s in fake.searches] == ["html"]


@pytest.mark.parametrize(("mode", "failure"), [("slow", "timeout"), ("garbage", "unparseable"), ("huge", "too_large")])
async def test_duckduckgo_fails_when_both_its_page_and_its_api_fail(
    fake: FakeWebSearch, session: aiohttp.ClientSession, mode: str, failure: str
) -> None:
    fake.set_mode(mode)  # type: ignore[arg-type]
    with pytest.raises(WebSearchError) as failed:
        await _ddg(fake, session).search("python")
    assert failed.value.failure == failure


async def test_ten_thousand_results_are_cut_to_the_limit(fake: FakeWebSearch, session) -> None:  # type: ignore[no-untyped-def]
    fake.set_mode("many")
    ddg = await DuckDuckGo(
        session, ProviderLimits(timeout=5.0, max_bytes=20_000_000, max_results=5), html_url=fake.html_url
    ).search("x")
    google = await GoogleSearch(
        session,
        ProviderLimits(timeout=5.0, max_bytes=20_000_000, max_results=5),
        api_key=fake.api_key,
        engine_id=fake.engine_id,
        api_url=fake.google_url,
    ).search("x")
    assert len(ddg) == len(google) == 5 < MANY
    # Within the default 2 MB a 10,000-result page (~10 MB) is refused whole rather than read for ever.
    with pytest.raises(WebSearchError) as failed:
        await DuckDuckGo(
            session, ProviderLimits(timeout=5.0), html_url=fake.html_url, instant_answer_url=fake.instant_answer_url
        ).search("x")
    assert failed.value.failure == "too_large"


async def test_google_sends_its_key_and_engine_and_reads_the_items(fake: FakeWebSearch, session) -> None:  # type: ignore[no-untyped-def]
    assert await _google(fake, session).search("python gil") == EXPECTED
    params = fake.searched("google")[0].params
    assert (params["key"], params["cx"], params["q"], params["num"]) == ("test-key", "test-cx", "python gil", "5")


@pytest.mark.parametrize(
    ("mode", "failure"), [("429", "status"), ("slow", "timeout"), ("garbage", "unparseable"), ("huge", "too_large")]
)
async def test_google_failures_are_web_search_errors(
    fake: FakeWebSearch, session: aiohttp.ClientSession, mode: str, failure: str
) -> None:
    fake.set_mode(mode, "google")  # type: ignore[arg-type]
    with pytest.raises(WebSearchError) as failed:
        await _google(fake, session).search("python")
    assert failed.value.failure == failure


async def test_a_wrong_google_key_is_a_status_error_whose_message_holds_no_key(fake: FakeWebSearch, session) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(WebSearchError) as failed:
        await _google(fake, session, key="secret-wrong-key").search("python")
    assert failed.value.failure == "status"
    assert "secret-wrong-key" not in str(failed.value)


def _reader(blacklist: str = "") -> PageReader:
    return PageReader(PageLimits(pages=3, max_bytes=100_000, timeout=2.0), Blacklist.parse(blacklist), LOOPBACK)


async def test_a_page_is_read_as_its_main_text(fake: FakeWebSearch) -> None:
    fake.serve_page(
        "a", "<html><head><title>T</title></head><body><nav>menu</nav><main><p>GIL news.</p></main></body></html>"
    )
    assert (await _reader().text(fake.page_url("a"))).strip() == "GIL news."


async def test_a_page_behind_a_login_or_missing_gives_no_text(fake: FakeWebSearch) -> None:
    assert await _reader().text(fake.page_url("login-wall")) == ""
    assert await _reader().text(fake.page_url("missing")) == ""


async def test_a_blacklisted_url_reached_by_redirect_is_never_requested(fake: FakeWebSearch) -> None:
    fake.serve_page("blocked", "<html><body><p>Forbidden words.</p></body></html>")
    fake.redirect("hop", fake.page_url("blocked"))
    assert await _reader("*/page/blocked").text(fake.page_url("hop")) == ""
    assert fake.page_requests == ["hop"]
    assert "Forbidden words." in await _reader().text(fake.page_url("hop"))  # without the rule it is read


async def test_a_page_on_a_private_address_is_refused_without_the_allowance(fake: FakeWebSearch) -> None:
    fake.serve_page("a", "<html><body><p>Internal.</p></body></html>")
    reader = PageReader(PageLimits(), Blacklist())
    assert await reader.text(fake.page_url("a")) == ""
    assert fake.page_requests == []
