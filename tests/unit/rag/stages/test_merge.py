"""The MERGE stage: parents, joined neighbours, filled FAQs and widened passages in one read, best first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from rag.faq.candidate import faq_candidate, faq_text
from rag.merge import by_score
from rag.pipeline import TurnContext
from rag.stages.merge import Merge
from rag.types import Candidate
from tests.support.merge_source import FAQ, FakeSource, laid_out, parent_child, piece, widening_source


def turn_with(candidates: Sequence[Candidate], *, reranked: Sequence[Candidate] = ()) -> TurnContext:
    return TurnContext(query="q", kb_ids=("kb",), candidates=list(candidates), reranked=list(reranked))


# --- parents ------------------------------------------------------------------------------------------------------


async def test_ten_child_hits_in_seven_parents_give_seven_results_scored_by_their_best_child() -> None:
    source = FakeSource()
    parent_child(source, "d", parents=7)
    scores = {0: 0.3, 1: 0.9, 2: 0.5, 4: 0.4, 5: 0.2, 8: 0.1, 12: 0.8, 16: 0.35, 20: 0.6, 24: 0.05}
    hits = [source.hit(f"d-c{position}", score) for position, score in scores.items()]
    turn = turn_with(hits)

    note = await Merge(source).run(turn)

    assert len(hits) == 10
    assert len(turn.merged) == 7
    assert [(c.id, c.score) for c in turn.merged] == [
        ("d-s0", 0.9),
        ("d-s3", 0.8),
        ("d-s5", 0.6),
        ("d-s1", 0.4),
        ("d-s4", 0.35),
        ("d-s2", 0.1),
        ("d-s6", 0.05),
    ]
    segments = {segment.segment_id: segment for segment in source.segments}
    for merged in turn.merged:
        assert merged.kind == "chunk"
        assert merged.segment_id == merged.id
        assert (merged.text, merged.start, merged.end) == (
            segments[merged.id].text,
            segments[merged.id].start,
            segments[merged.id].end,
        )
    assert turn.merged[0].metadata["chunk_ids"] == ["d-c0", "d-c1", "d-c2"]
    assert turn.merged[3].metadata["chunk_ids"] == ["d-c4", "d-c5"]
    assert source.calls == ["merge_reads"]
    assert note == "children=10->7 chunks=0->0 widened=0"


# --- joining adjacent chunks ------------------------------------------------------------------------------------


async def test_overlapping_chunks_are_joined_from_the_document_text_without_repeating_the_overlap() -> None:
    source = FakeSource()
    text = "".join(piece(i, 40) for i in range(10))
    source.add("d", text, [(0, 120), (100, 220), (200, 300), (320, 400)])  # chunk 3 follows chunk 2 on position
    turn = turn_with(
        [source.hit("d-c1", 0.9), source.hit("d-c0", 0.4), source.hit("d-c3", 0.6), source.hit("d-c2", 0.1)]
    )

    await Merge(source).run(turn)

    [joined] = turn.merged
    assert joined.text == text[0:400]
    assert all(joined.text.count(piece(i, 40)) == 1 for i in range(10))
    assert (joined.id, joined.score, joined.start, joined.end) == ("d-c1", 0.9, 0, 400)
    assert joined.metadata["chunk_ids"] == ["d-c0", "d-c1", "d-c2", "d-c3"]


async def test_a_run_with_no_gap_is_joined_from_its_chunks_own_texts_without_reading_storage() -> None:
    source = FakeSource()
    text = "".join(piece(i, 40) for i in range(10))
    source.add("d", text, [(0, 120), (100, 220), (200, 400)])
    turn = turn_with([source.hit("d-c1", 0.9), source.hit("d-c0", 0.4), source.hit("d-c2", 0.6)])

    await Merge(source).run(turn)

    [joined] = turn.merged
    assert joined.text == text[0:400]
    assert joined.metadata["chunk_ids"] == ["d-c0", "d-c1", "d-c2"]
    assert source.calls == []


async def test_chunks_that_are_not_adjacent_stay_apart_with_their_own_text() -> None:
    source = FakeSource()
    text, ranges = laid_out([400, 400, 400, 400])
    source.add("d", text, ranges)
    source.add("e", text, ranges)
    hits = [source.hit("d-c0", 0.3), source.hit("d-c2", 0.7), source.hit("e-c1", 0.5)]
    turn = turn_with(hits)

    await Merge(source).run(turn)

    assert [(c.id, c.text, c.metadata["chunk_ids"]) for c in turn.merged] == [
        ("d-c2", hits[1].text, ["d-c2"]),
        ("e-c1", hits[2].text, ["e-c1"]),
        ("d-c0", hits[0].text, ["d-c0"]),
    ]
    assert source.calls == []


async def test_chunks_of_a_document_gone_since_the_search_stay_apart() -> None:
    source = FakeSource()
    text, ranges = laid_out([400, 400])
    source.add("d", text, ranges)
    hits = [source.hit("d-c0", 0.3), source.hit("d-c1", 0.7)]
    del source.texts["d"]
    turn = turn_with(hits)

    await Merge(source).run(turn)

    assert [(c.id, c.text) for c in turn.merged] == [("d-c1", hits[1].text), ("d-c0", hits[0].text)]


# --- FAQs ----------------------------------------------------------------------------------------------------------


async def test_the_stage_fills_faqs_and_asks_storage_nothing_for_them() -> None:
    source = FakeSource()
    stale = replace(faq_candidate(FAQ, score=0.8, legs=frozenset({"faq"})), text="")
    turn = turn_with([stale])

    await Merge(source).run(turn)

    assert [c.text for c in turn.merged] == [faq_text(FAQ)]
    assert source.calls == []


# --- widening short passages ----------------------------------------------------------------------------------------


async def test_the_stage_widens_short_passages_in_one_batched_read_without_overlapping_each_other() -> None:
    source = widening_source()
    text, ranges = laid_out([100, 100, 100])
    source.add("e", text, ranges)
    hits = [source.hit("d-c2", 0.4), source.hit("d-c4", 0.9), source.hit("e-c1", 0.6)]
    turn = turn_with(hits)

    note = await Merge(source).run(turn)

    by_id = {c.id: c for c in turn.merged}
    assert [c.id for c in turn.merged] == ["d-c4", "e-c1", "d-c2"]
    # d-c4 widens first (best score): after it, d-c2 may not reach into d-c3 which d-c4 now holds.
    assert by_id["d-c4"].metadata["neighbour_ids"] == ["d-c3", "d-c5", "d-c6"]
    assert by_id["d-c2"].metadata["neighbour_ids"] == ["d-c0", "d-c1"]
    assert by_id["d-c2"].end <= by_id["d-c4"].start
    assert by_id["e-c1"].text == text
    assert source.calls == ["merge_reads"]
    assert note == "children=0->0 chunks=3->3 widened=3"


async def test_a_short_parent_is_widened_with_the_next_parents_children() -> None:
    source = FakeSource()
    parent_child(source, "d", parents=3, children=2, size=80)
    turn = turn_with([source.hit("d-c2", 0.5)])

    await Merge(source).run(turn)

    [parent] = turn.merged
    assert parent.id == "d-s1"
    assert parent.metadata["chunk_ids"] == ["d-c2"]
    assert parent.metadata["neighbour_ids"] == ["d-c0", "d-c1", "d-c4", "d-c5"]
    assert parent.text == source.texts["d"]


# --- the stage ------------------------------------------------------------------------------------------------------


async def test_nothing_in_gives_nothing_out_without_asking_storage() -> None:
    source = FakeSource()
    turn = turn_with([])
    await Merge(source).run(turn)
    assert turn.merged == []
    assert source.calls == []


@pytest.mark.parametrize(("in_reranked", "in_candidates", "expected"), [("r", "c", "r"), ("", "c", "c")])
async def test_the_stage_reads_reranked_or_else_candidates(in_reranked: str, in_candidates: str, expected: str) -> None:
    def one(name: str) -> list[Candidate]:
        return [Candidate(id=name, kind="chunk", kb_id="kb", text=name, score=0.5)] if name else []

    turn = turn_with(one(in_candidates), reranked=one(in_reranked))
    await Merge(FakeSource()).run(turn)
    assert [c.id for c in turn.merged] == [expected]


async def test_candidates_a_reranker_judged_irrelevant_do_not_come_back() -> None:
    turn = turn_with([Candidate(id="c", kind="chunk", kb_id="kb", text="c", score=0.5)])
    turn.judged = True
    await Merge(FakeSource()).run(turn)
    assert turn.merged == []


async def test_merged_passages_and_faqs_come_best_first_with_faqs_first_on_a_tie() -> None:
    source = FakeSource()
    parent_child(source, "p", parents=2)
    text, ranges = laid_out([400, 400, 400])
    source.add("g", text, ranges)
    faq = faq_candidate(FAQ, score=0.6, legs=frozenset({"faq"}))
    pool = [
        source.hit("g-c0", 0.6),
        faq,
        source.hit("p-c0", 0.2),
        source.hit("p-c5", 0.95),
        source.hit("g-c2", 0.1),
        source.hit("p-c1", 0.7),
    ]
    turn = turn_with([], reranked=pool)

    await Merge(source).run(turn)

    assert [(c.id, c.score) for c in turn.merged] == [
        ("p-s1", 0.95),
        ("p-s0", 0.7),
        (FAQ.id, 0.6),
        ("g-c0", 0.6),
        ("g-c2", 0.1),
    ]
    assert turn.merged == by_score(turn.merged)
