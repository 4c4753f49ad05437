"""rag.merge: parents from child hits, joined neighbours, FAQ text, widened short passages."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from rag.faq.candidate import faq_candidate, faq_text
from rag.merge import (
    MergeConfig,
    TextWindow,
    adjacent_runs,
    fill_faq,
    group_by_parent,
    join_run,
    run_span,
    run_text,
    widen_short,
)
from rag.types import Candidate
from storage.records import TextSpan
from tests.support.merge_source import FAQ, FakeSource, laid_out, parent_child, piece, widening_source

# --- MergeConfig --------------------------------------------------------------------------------------------------


def test_merge_config_defaults_are_weknoras() -> None:
    assert (MergeConfig().short_chars, MergeConfig().widen_to) == (350, 850)


@pytest.mark.parametrize(("short_chars", "widen_to"), [(-1, 850), (900, 850), (0, -1)])
def test_merge_config_rejects_impossible_sizes(short_chars: int, widen_to: int) -> None:
    with pytest.raises(ValueError, match="short_chars <= widen_to"):
        MergeConfig(short_chars=short_chars, widen_to=widen_to)


# --- parents ------------------------------------------------------------------------------------------------------


def test_a_parent_takes_its_childrens_best_scores_all_legs_and_the_best_childs_metadata() -> None:
    source = FakeSource()
    parent_child(source, "d", parents=1)
    children = [
        source.hit("d-c2", 0.7, base_score=0.2, model_score=None, legs=frozenset({"bm25"})),
        source.hit("d-c0", 0.4, base_score=0.6, model_score=0.3, legs=frozenset({"vector"})),
        source.hit("d-c3", 0.9, base_score=0.1, model_score=0.8, legs=frozenset({"history"})),
    ]

    [parent] = group_by_parent(children, {"d-s0": source.segments[0]})

    assert (parent.id, parent.kb_id, parent.document_id, parent.segment_id) == ("d-s0", "kb", "d", "d-s0")
    assert (parent.score, parent.base_score, parent.model_score) == (0.9, 0.6, 0.8)
    assert parent.legs == {"bm25", "vector", "history"}
    assert parent.position == 0
    assert parent.metadata == {"title": "d", "page": 3, "chunk_ids": ["d-c0", "d-c2", "d-c3"]}


def test_a_parent_has_no_model_score_when_no_child_has_one() -> None:
    source = FakeSource()
    parent_child(source, "d", parents=1)
    [parent] = group_by_parent([source.hit("d-c0", 0.5), source.hit("d-c1", 0.6)], {"d-s0": source.segments[0]})
    assert parent.model_score is None


def test_a_child_whose_parent_is_gone_stays_a_child_in_its_place() -> None:
    source = FakeSource()
    parent_child(source, "d", parents=2)
    children = [source.hit("d-c0", 0.5), source.hit("d-c4", 0.9), source.hit("d-c1", 0.3)]

    merged = group_by_parent(children, {"d-s0": source.segments[0]})

    assert [c.id for c in merged] == ["d-s0", "d-c4"]
    assert merged[1] == children[1]


# --- joining adjacent chunks ------------------------------------------------------------------------------------

# (document, start, end, position) per chunk; the expected runs as chunk indexes.
JOIN_CASES = {
    "overlapping": ([("d", 0, 10, 0), ("d", 5, 15, 1)], [[0, 1]]),
    "touching": ([("d", 0, 10, 0), ("d", 10, 20, 1)], [[0, 1]]),
    "touching, positions apart": ([("d", 0, 10, 0), ("d", 10, 20, 7)], [[0, 1]]),
    "overlapping, positions apart": ([("d", 0, 10, 0), ("d", 9, 20, 7)], [[0, 1]]),
    "one character apart": ([("d", 0, 10, 0), ("d", 11, 20, 7)], [[0], [1]]),
    "consecutive positions across a gap": ([("d", 0, 10, 0), ("d", 12, 20, 1)], [[0, 1]]),
    "apart": ([("d", 0, 10, 0), ("d", 30, 40, 2)], [[0], [1]]),
    "same offsets, other document": ([("d", 0, 10, 0), ("e", 5, 15, 1)], [[0], [1]]),
    "a chain joins through its middle": ([("d", 20, 30, 2), ("d", 0, 10, 0), ("d", 10, 20, 1)], [[1, 2, 0]]),
    "nested": ([("d", 0, 40, 0), ("d", 10, 20, 0)], [[0, 1]]),
    "no text range": ([("d", 0, 0, 0), ("d", 0, 0, 1)], [[0], [1]]),
    "two runs, earliest first": ([("d", 50, 60, 5), ("d", 0, 10, 0), ("d", 60, 70, 6)], [[0, 2], [1]]),
}


@pytest.mark.parametrize(("chunks", "expected"), list(JOIN_CASES.values()), ids=list(JOIN_CASES))
def test_adjacent_runs_group_overlapping_touching_or_consecutive_chunks_of_one_document(
    chunks: list[tuple[str, int, int, int]], expected: list[list[int]]
) -> None:
    candidates = [
        Candidate(id=str(i), kind="chunk", kb_id="kb", text="", score=0.0, document_id=d, start=s, end=e, position=p)
        for i, (d, s, e, p) in enumerate(chunks)
    ]
    runs = adjacent_runs(candidates)
    assert [[int(c.id) for c in run] for run in runs] == expected


def test_a_chunk_without_a_document_is_never_joined() -> None:
    loose = [Candidate(id=str(i), kind="chunk", kb_id="kb", text="t", score=0.0, start=0, end=5) for i in range(2)]
    assert [[c.id for c in run] for run in adjacent_runs(loose)] == [["0"], ["1"]]


def test_a_run_span_must_lie_in_one_document() -> None:
    mixed = [
        Candidate(id="a", kind="chunk", kb_id="kb", text="", score=0.0, document_id="d", start=0, end=5),
        Candidate(id="b", kind="chunk", kb_id="kb", text="", score=0.0, document_id="e", start=5, end=9),
    ]
    assert run_span(mixed[:1]) == TextSpan("d", 0, 5)
    with pytest.raises(ValueError, match="exactly one document"):
        run_span(mixed)


def test_a_joined_run_keeps_the_best_members_identity_and_every_sub_chunk_id() -> None:
    source = FakeSource()
    text, ranges = laid_out([30, 30, 30], gap="")
    source.add("d", text, ranges)
    run = [source.hit("d-c0", 0.2), source.hit("d-c1", 0.8, legs=frozenset({"bm25"})), source.hit("d-c2", 0.5)]

    joined = join_run(run, text)

    assert (joined.id, joined.score, joined.start, joined.end, joined.position) == ("d-c1", 0.8, 0, 90, 0)
    assert joined.legs == {"vector", "bm25"}
    assert joined.metadata == {"title": "d", "page": 1, "chunk_ids": ["d-c0", "d-c1", "d-c2"]}


# --- FAQs ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"question": "Q1?", "answers": ["A1", "A2"]}, "Q: Q1?\nAnswer: - A1\n- A2"),
        ({"question": " Q1? ", "answers": (" A1 ", "", "  ")}, "Q: Q1?\nAnswer: - A1"),
        ({"question": "Q1?", "answers": []}, "stored text"),
        ({"question": "  ", "answers": ["A1"]}, "stored text"),
        ({"answers": ["A1"]}, "stored text"),
        ({"question": "Q1?", "answers": "A1"}, "stored text"),
        ({}, "stored text"),
    ],
    ids=["filled", "trimmed", "no answers", "blank question", "no question", "answers not a list", "no metadata"],
)
def test_an_faq_is_filled_as_question_and_answers_when_its_metadata_has_both(
    metadata: dict[str, Any], expected: str
) -> None:
    candidate = Candidate(id="f", kind="faq", kb_id="kb", text="stored text", score=0.5, metadata=metadata)
    assert fill_faq(candidate).text == expected


def test_a_filled_faq_reads_as_faq_text_writes_it_and_a_chunk_is_untouched() -> None:
    stale = replace(faq_candidate(FAQ, score=0.8, legs=frozenset({"faq"})), text="Five working days.")
    assert fill_faq(stale).text == faq_text(FAQ)
    chunk = Candidate(
        id="c", kind="chunk", kb_id="kb", text="t", score=0.1, metadata={"question": "q", "answers": ["a"]}
    )
    assert fill_faq(chunk) is chunk


# --- widening short passages ----------------------------------------------------------------------------------------


def window_of(source: FakeSource, document_id: str = "d") -> TextWindow:
    return TextWindow(document_id, 0, source.texts[document_id])


def test_a_short_passage_grows_alternately_before_and_after_nearest_first_up_to_widen_to() -> None:
    source = widening_source()
    hit = source.hit("d-c3", 0.5)

    wide = widen_short(hit, source.chunks, window_of(source))

    # 3, then 2 (before), 4 (after), 1, 5: 758 chars; 0 or 6 would make 910 > 850.
    c1, c5 = source.chunk("d-c1"), source.chunk("d-c5")
    assert (wide.start, wide.end) == (c1.start, c5.end)
    assert wide.text == source.texts["d"][c1.start : c5.end]
    assert len(wide.text) == 758
    assert wide.metadata["neighbour_ids"] == ["d-c1", "d-c2", "d-c4", "d-c5"]
    assert (wide.id, wide.score, wide.position) == (hit.id, hit.score, hit.position)


@pytest.mark.parametrize("widen_to", [350, 500, 851, 2000])
def test_a_widened_passage_never_exceeds_widen_to(widen_to: int) -> None:
    source = widening_source()
    hit = source.hit("d-c3", 0.5)
    wide = widen_short(hit, source.chunks, window_of(source), config=MergeConfig(widen_to=widen_to))
    assert len(hit.text) < len(wide.text) <= widen_to
    assert wide.text == source.texts["d"][wide.start : wide.end]


def test_a_side_that_cannot_grow_leaves_the_other_side_growing() -> None:
    source = widening_source([150, 150, 150, 150, 700, 150])
    wide = widen_short(source.hit("d-c3", 0.5), source.chunks, window_of(source))
    assert wide.metadata["neighbour_ids"] == ["d-c0", "d-c1", "d-c2"]


def test_widening_stops_short_of_text_another_selected_passage_holds() -> None:
    source = widening_source()
    c4 = source.chunk("d-c4")
    wide = widen_short(source.hit("d-c3", 0.5), source.chunks, window_of(source), taken=[(c4.start, c4.end)])
    assert wide.metadata["neighbour_ids"] == ["d-c0", "d-c1", "d-c2"]
    assert wide.end == source.chunk("d-c3").end


def test_widening_only_takes_chunks_of_the_passages_own_document() -> None:
    source = FakeSource()
    text, ranges = laid_out([150, 150, 150])
    source.add("d", text, ranges[1:2])  # d's text around its one chunk is in the window, but d has no other chunk
    source.add("e", text, ranges)
    hit = source.hit("d-c0", 0.5)
    assert widen_short(hit, source.chunks, window_of(source)) == hit


def test_overlapping_neighbours_add_only_the_text_they_bring() -> None:
    source = FakeSource()
    text = "".join(piece(i, 50) for i in range(6))
    source.add("d", text, [(0, 100), (80, 180), (160, 300)])
    wide = widen_short(source.hit("d-c1", 0.5), source.chunks, TextWindow("d", 0, text))
    assert wide.text == text
    assert wide.metadata["neighbour_ids"] == ["d-c0", "d-c2"]


LEFT_AS_IS: dict[str, Callable[[FakeSource], Candidate]] = {
    "an FAQ": lambda source: replace(source.hit("d-c1", 0.5), kind="faq"),
    "long enough": lambda source: source.hit("d-c2", 0.5),
    "text not at its offsets": lambda source: replace(source.hit("d-c1", 0.5), text="other"),
    "another document": lambda source: replace(source.hit("d-c1", 0.5), document_id="e"),
    "outside the window": lambda source: replace(source.hit("d-c1", 0.5), start=5000, end=5150),
}


@pytest.mark.parametrize("make", list(LEFT_AS_IS.values()), ids=list(LEFT_AS_IS))
def test_widening_leaves_alone_what_it_cannot_or_need_not_widen(make: Callable[[FakeSource], Candidate]) -> None:
    source = widening_source([150, 150, 400, 150, 150])
    candidate = make(source)
    assert widen_short(candidate, source.chunks, window_of(source)) == candidate


def test_a_runs_text_is_read_from_its_chunks_only_when_they_leave_no_gap() -> None:
    text = "".join(piece(i, 40) for i in range(10))
    source = FakeSource()
    source.add("d", text, [(0, 120), (100, 220), (220, 300), (320, 400)])
    c0, c1, c2, c3 = (source.hit(f"d-c{i}", 0.5) for i in range(4))
    assert run_text([c2, c0, c1]) == text[0:300]
    assert run_text([c0, c1, c2, c3]) is None, "20 characters between chunk 2 and 3 are in no chunk"
    assert run_text([replace(c0, text=c0.text + " ")]) is None, "a text that is not its range's is not trusted"
