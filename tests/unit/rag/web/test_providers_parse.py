"""The providers' answers parsed in their real formats (fakes.web_search.formats, whose sources it names)."""

from __future__ import annotations

import json

import pytest

from fakes.web_search.formats import GARBAGE_HTML_PAGES, Hit, google_error, google_search, instant_answer, results_page
from rag.web.duckduckgo import parse_instant_answer, parse_results_page, result_url
from rag.web.google import parse_search
from rag.web.types import WebResult, WebSearchError

HITS = [
    Hit(
        "https://docs.python.org/3/whatsnew/3.13.html",
        "What's New In Python 3.13",
        "Python 3.13 & the free-threaded build.",
    ),
    Hit(
        "https://peps.python.org/pep-0703/",
        "PEP 703 – Making the GIL Optional",  # noqa: RUF001 (the page's own dash)
        "Making the Global Interpreter Lock optional.",
    ),
    Hit(
        "https://en.wikipedia.org/wiki/Python_(programming_language)",
        "Python (programming language)",
        "A high-level language.",
    ),
]


def test_the_duckduckgo_results_page_gives_each_results_target_title_and_snippet_and_skips_the_ad() -> None:
    page = results_page("Python 3.13 GIL", HITS)
    assert parse_results_page(page, 10) == [WebResult(hit.url, hit.title, hit.snippet) for hit in HITS]


def test_the_results_page_is_cut_at_the_limit() -> None:
    assert [r.url for r in parse_results_page(results_page("q", HITS), 2)] == [HITS[0].url, HITS[1].url]


def test_an_empty_results_page_is_no_results_not_an_error() -> None:
    assert parse_results_page(results_page("nothing", []), 10) == []


@pytest.mark.parametrize("page", GARBAGE_HTML_PAGES)
def test_a_page_without_the_results_markup_is_unparseable(page: str) -> None:
    with pytest.raises(WebSearchError) as failed:
        parse_results_page(page, 10)
    assert failed.value.failure == "unparseable"


@pytest.mark.parametrize(
    ("href", "url"),
    [
        ("//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Fa%3Fb%3D1&rut=x", "https://example.org/a?b=1"),
        ("https://example.org/plain", "https://example.org/plain"),
        ("https://duckduckgo.com/y.js?ad_domain=x", None),  # an ad
        ("//duckduckgo.com/l/?uddg=javascript%3Aalert(1)", None),
        ("javascript:alert(1)", None),
    ],
)
def test_a_result_link_is_decoded_from_duckduckgos_redirect(href: str, url: str | None) -> None:
    assert result_url(href) == url


def test_the_instant_answer_gives_its_abstract_then_topics_flattening_groups() -> None:
    found = parse_instant_answer(json.dumps(instant_answer(HITS)), 10)
    assert [r.url for r in found] == [hit.url for hit in HITS]
    assert found[0] == WebResult(HITS[0].url, HITS[0].title, HITS[0].snippet)
    assert found[2].title == HITS[2].title  # from "Title - text" of a topic inside a named group
    assert HITS[2].snippet in found[2].snippet


def test_an_instant_answer_without_an_abstract_gives_nothing() -> None:
    assert parse_instant_answer(json.dumps(instant_answer([])), 10) == []


@pytest.mark.parametrize("body", ["<html>not json</html>", "[1, 2]"])
def test_an_instant_answer_that_is_no_json_object_is_unparseable(body: str) -> None:
    with pytest.raises(WebSearchError, match="instant answer"):
        parse_instant_answer(body, 10)


def test_google_items_give_link_title_and_snippet() -> None:
    found = parse_search(json.dumps(google_search("python gil", "cx", HITS)), 10)
    assert found == [WebResult(hit.url, hit.title, hit.snippet) for hit in HITS]


def test_a_google_answer_without_items_is_no_results() -> None:
    assert parse_search(json.dumps(google_search("nothing", "cx", [])), 10) == []


@pytest.mark.parametrize(
    "body",
    ["<html>Sorry</html>", json.dumps({"items": "nope"}), json.dumps(google_error(400, "bad", "badRequest"))[:20]],
)
def test_a_google_answer_that_is_not_its_json_is_unparseable(body: str) -> None:
    with pytest.raises(WebSearchError) as failed:
        parse_search(body, 10)
    assert failed.value.failure == "unparseable"
