"""rag.merge: parents from child hits, joined neighbours, FAQ text, widened short passages, and the MERGE stage."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest

from rag.faq_text import faq_candidate, faq_text
from rag.merge import (
    Merge,
    MergeConfig,
    TextWindow,
    adjacent_runs,
    by_score,
    fill_faq,
    group_by_parent,
    join_run,
    run_span,
    widen_short,
)
from rag.pipeline import TurnContext
from rag.retrieval import chunk_candidate
from rag.types import Candidate
from storage.records import ChunkRecord, FaqRecord, MergeReads, SegmentRecord, TextSpan

Range = tuple[int, int]


def piece(index: int, size: int) -> str:
    """`size` characters no other piece shares, so a repeated stretch of text shows."""
    return f"<{index}>".ljust(size, chr(ord("a") + index % 26))


def laid_out(sizes: Sequence[int], gap: str = "\n\n") -> tuple[str, list[Range]]:
    """Pieces of the given sizes joined by `gap`: the text and each piece's range in it."""
    text, ranges = "", []
    for index, size in enumerate(sizes):
        text += gap if text else ""
        ranges.append((len(text), len(text) + size))
        text += piece(index, size)
    return text, ranges


class FakeSource:
    """Our MergeSource over in-memory documents, recording the calls (each is one SQL statement in storage)."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.chunks: list[ChunkRecord] = []
        self.segments: list[SegmentRecord] = []
        self.calls: list[str] = []

    def add(self, document_id: str, text: str, ranges: Sequence[Range], parents: Sequence[Range] = ()) -> None:
        """A document whose chunks cover `ranges`; with `parents`, each chunk is the child of the parent holding it."""
        self.texts[document_id] = text
        segment_ids = [f"{document_id}-s{number}" for number in range(len(parents))]
        children: dict[str, list[str]] = {segment_id: [] for segment_id in segment_ids}
        for position, (start, end) in enumerate(ranges):
            holder = next((i for i, (low, high) in enumerate(parents) if low <= start and end <= high), None)
            segment_id = None if holder is None else segment_ids[holder]
            chunk_id = f"{document_id}-c{position}"
            if segment_id is not None:
                children[segment_id].append(chunk_id)
            self.chunks.append(
                ChunkRecord(chunk_id, "kb", document_id, segment_id, position, start, end, text[start:end], "")
            )
        for number, (segment_id, (start, end)) in enumerate(zip(segment_ids, parents, strict=True)):
            self.segments.append(
                SegmentRecord(
                    segment_id, document_id, "kb", number, start, end, text[start:end], tuple(children[segment_id])
                )
            )

    def chunk(self, chunk_id: str) -> ChunkRecord:
        return next(chunk for chunk in self.chunks if chunk.chunk_id == chunk_id)

    def hit(self, chunk_id: str, score: float, **fields: Any) -> Candidate:
        """The chunk as retrieval hands it on."""
        chunk = self.chunk(chunk_id)
        candidate = chunk_candidate(replace(chunk, title=chunk.document_id), score, frozenset({"vector"}))
        return replace(candidate, metadata={**candidate.metadata, "page": chunk.position}, **fields)

    async def merge_reads(self, segment_ids: Sequence[str], spans: Sequence[TextSpan]) -> MergeReads:
        self.calls.append("merge_reads")
        return MergeReads(
            segments=tuple(await self.segments_by_ids(segment_ids)),
            chunks=tuple(await self.chunks_overlapping(spans)),
            texts=await self.text_slices(spans),
        )

    async def segments_by_ids(self, segment_ids: Sequence[str]) -> list[SegmentRecord]:
        return [segment for segment in self.segments if segment.segment_id in segment_ids]

    async def chunks_overlapping(self, spans: Sequence[TextSpan]) -> list[ChunkRecord]:
        return [
            chunk
            for chunk in self.chunks
            if any(
                span.document_id == chunk.document_id and chunk.start < span.end and chunk.end > span.start
                for span in spans
            )
        ]

    async def text_slices(self, spans: Sequence[TextSpan]) -> dict[TextSpan, str]:
        return {
            span: self.texts[span.document_id][span.start : span.end]
            for span in spans
            if span.document_id in self.texts
        }


def parent_child(source: FakeSource, document_id: str, parents: int, children: int = 4, size: int = 100) -> None:
    """A parent-child document: `parents` parents of `children` children of `size` characters each."""
    parent_texts = ["\n".join(piece(p * children + c, size) for c in range(children)) for p in range(parents)]
    text = "\n\n".join(parent_texts)
    parent_ranges, child_ranges, offset = [], [], 0
    for parent_text in parent_texts:
        parent_ranges.append((offset, offset + len(parent_text)))
        child_ranges.extend((offset + c * (size + 1), offset + c * (size + 1) + size) for c in range(children))
        offset += len(parent_text) + 2
    source.add(document_id, text, child_ranges, parent_ranges)


def turn_with(candidates: Sequence[Candidate], *, reranked: Sequence[Candidate] = ()) -> TurnContext:
    return TurnContext(query="q", kb_ids=("kb",), candidates=list(candidates), reranked=list(reranked))


# --- MergeConfig --------------------------------------------------------------------------------------------------


def test_merge_config_defaults_are_weknoras() -> None:
    assert (MergeConfig().short_chars, MergeConfig().widen_to) == (350, 850)


@pytest.mark.parametrize(("short_chars", "widen_to"), [(-1, 850), (900, 850), (0, -1)])
def test_merge_config_rejects_impossible_sizes(short_chars: int, widen_to: int) -> None:
    with pytest.raises(ValueError, match="short_chars <= widen_to"):
        MergeConfig(short_chars=short_chars, widen_to=widen_to)


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

FAQ = FaqRecord(
    "f1", "kb", "How long do refunds take?", (), (), ("Five working days.", "To the original card."), True, ""
)


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


async def test_the_stage_fills_faqs_and_asks_storage_nothing_for_them() -> None:
    source = FakeSource()
    stale = replace(faq_candidate(FAQ, score=0.8, legs=frozenset({"faq"})), text="")
    turn = turn_with([stale])

    await Merge(source).run(turn)

    assert [c.text for c in turn.merged] == [faq_text(FAQ)]
    assert source.calls == []


# --- widening short passages ----------------------------------------------------------------------------------------

SIZES = [150] * 7  # pieces 0..6; the hit is piece 3


def widening_source(sizes: Sequence[int] = SIZES) -> FakeSource:
    source = FakeSource()
    text, ranges = laid_out(sizes)
    source.add("d", text, ranges)
    return source


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
