"""Web results as passages: ranked by words and meaning, chosen round robin per site, joined per URL."""

from __future__ import annotations

from rag.web.compress import (
    PASSAGE_CHARS,
    WebPassage,
    bm25_scores,
    consolidate,
    passages_of,
    rank_passages,
    round_robin,
)
from rag.web.types import WebResult


def _words(text: str) -> list[str]:
    return text.lower().split()


def _passage(url: str, number: int, text: str = "x") -> WebPassage:
    return WebPassage(f"{url}#{number}", url, f"title of {url}", text)


def test_a_result_is_its_snippet_then_its_page_in_pieces_of_bounded_size() -> None:
    page = "\n".join(["A short paragraph."] * 3 + ["y" * (2 * PASSAGE_CHARS + 10)])
    passages = passages_of(WebResult("https://a.example/p", "Title", "Snippet."), page)
    assert passages[0].text == "Title\nSnippet."
    assert all(len(p.text) <= PASSAGE_CHARS for p in passages)
    assert [p.id for p in passages] == [f"https://a.example/p#{n}" for n in range(len(passages))]
    assert passages[1].text.startswith("A short paragraph.\nA short paragraph.")


def test_bm25_prefers_the_document_with_the_rarer_query_term() -> None:
    scores = bm25_scores(["gil", "python"], [["python", "release"], ["python", "gil"], ["cooking"]])
    assert scores[1] > scores[0] > scores[2] == 0.0


def test_round_robin_gives_every_site_a_say_before_any_gets_a_second() -> None:
    ranked = [
        (_passage("https://big.example/1", 0), 0.9),
        (_passage("https://big.example/2", 0), 0.8),
        (_passage("https://www.big.example/3", 0), 0.7),
        (_passage("https://small.example/a", 0), 0.1),
        (_passage("https://other.example/b", 0), 0.05),
    ]
    chosen = round_robin(ranked, 4)
    assert [p.url for p, _ in chosen] == [
        "https://big.example/1",
        "https://small.example/a",
        "https://other.example/b",
        "https://big.example/2",
    ]


def test_passages_of_one_url_are_joined_in_page_order_with_their_best_score() -> None:
    url = "https://a.example/p"
    chosen = [
        (_passage(url, 2, "second piece"), 0.5),
        (_passage("https://b.example/q", 0, "other"), 0.6),
        (_passage(url, 0, "snippet"), 0.9),
    ]
    references = consolidate(chosen)
    assert [r.url for r in references] == [url, "https://b.example/q"]
    assert references[0].text == "snippet\n…\nsecond piece"
    assert references[0].score == 0.9
    assert references[0].passage_ids == (f"{url}#0", f"{url}#2")


def test_ranking_fuses_words_and_meaning() -> None:
    passages = [_passage("https://a.example", 0, "python gil removal"), _passage("https://b.example", 0, "bread")]
    vectors = [[0.0, 1.0], [1.0, 0.0]]
    terms = [_words(p.text) for p in passages]
    by_words = rank_passages(_words("python gil"), None, passages, terms, vectors)
    assert [p.url for p, _ in by_words] == ["https://a.example"]  # bread shares no word: not a match by words
    by_both = rank_passages(_words("python gil"), [1.0, 0.0], passages, terms, vectors)
    assert {p.url for p, _ in by_both} == {"https://a.example", "https://b.example"}
