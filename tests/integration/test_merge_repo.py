"""DocumentRepo's reads for MERGE (parents, chunks over a span, text slices) on both databases; MERGE end to end."""

from __future__ import annotations

import uuid
from dataclasses import replace
from itertools import combinations

import pytest
import tiktoken

from rag.ingest.documents import DocumentIngestor, SourceFile
from rag.ingest.rules import parse_rule
from rag.lexical import LexicalAnalyzer
from rag.merge import MergeConfig
from rag.models.embedders import OnnxEmbedder
from rag.pipeline import TurnContext
from rag.retrieval import chunk_candidate
from rag.stages.merge import Merge
from rag.types import Candidate
from storage.db import Database
from storage.records import ChunkRecord, DocumentVersion, SegmentRecord, TextSpan
from storage.repos.documents import DocumentRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.repos.merge_reads import MergeReadRepo
from storage.weaviate.store import WeaviateStore
from tests.integration.sql_count import count_statements

# CJK and a character outside the BMP: slices must count characters the way Python does, on both databases.
PARTS = (
    "Returns are accepted within 30 days.",
    "退款会在五个工作日内退回原卡。",
    "Party 🎉 time: an emoji outside the BMP.",
    "Shipping is free over 50 euros.",
)
TEXT = "\n\n".join(PARTS)
RANGES = [(TEXT.index(part), TEXT.index(part) + len(part)) for part in PARTS]


def _version(kb_id: str, name: str, *, parent_child: bool) -> tuple[DocumentVersion, str]:
    document_id = str(uuid.uuid4())
    segment_ids = [str(uuid.uuid4()), str(uuid.uuid4())] if parent_child else [None, None]
    chunk_ids = [str(uuid.uuid4()) for _ in PARTS]
    chunks = tuple(
        ChunkRecord(chunk_ids[i], kb_id, document_id, segment_ids[i // 2], i, start, end, TEXT[start:end], "")
        for i, (start, end) in enumerate(RANGES)
    )
    segments = tuple(
        SegmentRecord(
            str(segment_ids[n]),
            document_id,
            kb_id,
            n,
            RANGES[2 * n][0],
            RANGES[2 * n + 1][1],
            TEXT[RANGES[2 * n][0] : RANGES[2 * n + 1][1]],
            (chunk_ids[2 * n], chunk_ids[2 * n + 1]),
            {"page": n + 1},
        )
        for n in range(2)
        if parent_child
    )
    version = DocumentVersion(kb_id, f"upload:{name}", name, "text/plain", name, "rule", TEXT, segments, chunks)
    return version, document_id


async def _stored(db: Database) -> tuple[DocumentRepo, str, str]:
    """A parent-child document and a general one with the same text and offsets: (repo, parent-child id, general id)."""
    kb = await KnowledgeBaseRepo(db).create(f"kb-{uuid.uuid4().hex[:8]}", chunking={})
    documents = DocumentRepo(db)
    stored = []
    for name, parent_child in (("parents.txt", True), ("general.txt", False)):
        version, document_id = _version(kb.id, name, parent_child=parent_child)
        await documents.store_version(version, document_id)
        stored.append(document_id)
    return documents, stored[0], stored[1]


# --- segments_by_ids -----------------------------------------------------------------------------------------------


async def test_segments_by_ids_returns_the_stored_parents_asked_for_once_each(db: Database) -> None:
    documents, parents_id, _ = await _stored(db)
    first, second = await documents.segments(parents_id)

    found = await documents.segments_by_ids([second.segment_id, str(uuid.uuid4()), first.segment_id, second.segment_id])

    assert sorted(found, key=lambda segment: segment.position) == [first, second]
    assert first.text == TEXT[first.start : first.end]
    assert first.metadata == {"page": 1}
    assert await documents.segments_by_ids([]) == []


# --- chunks_overlapping --------------------------------------------------------------------------------------------

OVERLAP_CASES = {
    "exactly one chunk": ([RANGES[1]], [1]),
    "the gap between two chunks touches both, overlaps neither": ([(RANGES[0][1], RANGES[1][0])], []),
    "one character into the next chunk": ([(RANGES[0][0], RANGES[1][0] + 1)], [0, 1]),
    "inside one chunk": ([(RANGES[2][0] + 3, RANGES[2][0] + 5)], [2]),
    "empty span": ([(5, 5)], []),
    "the whole text": ([(0, len(TEXT))], [0, 1, 2, 3]),
    "two spans, overlapping each other": ([RANGES[3], RANGES[0], (0, RANGES[0][1] + 1)], [0, 3]),
    "past the end": ([(len(TEXT), len(TEXT) + 100)], []),
}


@pytest.mark.parametrize(("ranges", "expected"), list(OVERLAP_CASES.values()), ids=list(OVERLAP_CASES))
async def test_chunks_overlapping_finds_the_chunks_a_span_intersects_in_that_document_only(
    db: Database, ranges: list[tuple[int, int]], expected: list[int]
) -> None:
    documents, parents_id, _ = await _stored(db)
    chunks = await documents.document_chunks(parents_id)

    found = await documents.chunks_overlapping([TextSpan(parents_id, start, end) for start, end in ranges])

    assert found == [chunks[position] for position in expected]


async def test_chunks_overlapping_spans_of_several_documents_come_by_document_then_position(db: Database) -> None:
    documents, parents_id, general_id = await _stored(db)
    spans = [TextSpan(general_id, *RANGES[3]), TextSpan(parents_id, 0, len(TEXT)), TextSpan(general_id, *RANGES[0])]

    found = await documents.chunks_overlapping(spans)

    expected = sorted(
        [*await documents.document_chunks(parents_id), *(await documents.document_chunks(general_id))[::3]],
        key=lambda chunk: (chunk.document_id, chunk.position),
    )
    assert found == expected
    assert {chunk.segment_id is None for chunk in found if chunk.document_id == general_id} == {True}
    assert await documents.chunks_overlapping([]) == []


# --- text_slices ---------------------------------------------------------------------------------------------------

SLICES = [
    (0, len(TEXT)),
    RANGES[1],
    RANGES[2],
    (RANGES[2][0] + 6, RANGES[2][0] + 7),  # the emoji alone
    (RANGES[1][0] + 2, RANGES[2][0] + 8),  # from inside the Chinese past the emoji
    (7, 7),
    (len(TEXT) - 4, len(TEXT) + 50),
    (len(TEXT) + 10, len(TEXT) + 20),
]


async def test_text_slices_cut_the_cleaned_text_as_python_slices_do(db: Database) -> None:
    documents, parents_id, general_id = await _stored(db)
    spans = [TextSpan(parents_id, start, end) for start, end in SLICES]

    found = await documents.text_slices([*spans, TextSpan(general_id, *RANGES[3]), TextSpan(str(uuid.uuid4()), 0, 5)])

    assert found == {
        **{span: TEXT[span.start : span.end] for span in spans},
        TextSpan(general_id, *RANGES[3]): PARTS[3],
    }
    assert found[spans[3]] == "🎉"


async def test_text_slices_answer_many_spans_in_one_call(db: Database) -> None:
    documents, parents_id, _ = await _stored(db)
    spans = [TextSpan(parents_id, start, start + 9) for start in range(len(TEXT))] * 2

    found = await documents.text_slices(spans)

    assert len(spans) > 250
    assert found == {span: TEXT[span.start : span.end] for span in spans}
    assert await documents.text_slices([]) == {}


@pytest.mark.parametrize(("start", "end"), [(-1, 5), (5, 4), (-3, -1)])
async def test_text_slices_reject_a_span_that_is_no_range(db: Database, start: int, end: int) -> None:
    documents, parents_id, _ = await _stored(db)
    with pytest.raises(ValueError, match="0 <= start <= end"):
        await documents.text_slices([TextSpan(parents_id, 0, 3), TextSpan(parents_id, start, end)])


# --- MERGE end to end ---------------------------------------------------------------------------------------------

GUIDE = """# Returns

Items can be returned within 30 days of purchase. The receipt is required for every return.

## Refunds

Refunds are paid to the original card within five working days. 退款会在五个工作日内退回原卡。

# Shipping

Orders ship from our warehouse every weekday. Express delivery costs extra and arrives next day.
"""


@pytest.fixture(scope="module")
def lexical() -> LexicalAnalyzer:
    return LexicalAnalyzer()


# --- merge_reads: all three in one statement -------------------------------------------------------------------------


async def test_merge_reads_answers_as_the_three_separate_reads_do_in_one_statement(db: Database) -> None:
    documents, parents_id, general_id = await _stored(db)
    segment_ids = [segment.segment_id for segment in await documents.segments(parents_id)][:2]
    spans = [TextSpan(parents_id, *RANGES[1]), TextSpan(general_id, 0, 12), TextSpan(general_id, 5, 5)]
    spans.append(TextSpan(str(uuid.uuid4()), 0, 5))

    with count_statements(db) as statements:
        reads = await MergeReadRepo(db).merge_reads([*segment_ids, str(uuid.uuid4())], spans)

    assert len(statements) == 1
    assert sorted(reads.segments, key=lambda s: s.position) == sorted(
        await documents.segments_by_ids(segment_ids), key=lambda s: s.position
    )
    assert list(reads.chunks) == await documents.chunks_overlapping(spans)
    assert dict(reads.texts) == await documents.text_slices(spans)


async def test_merge_reads_of_the_same_shape_answer_each_call_with_its_own_spans(db: Database) -> None:
    # The statement is built once per shape and reused, so only the bound values may tell two calls apart.
    documents, parents_id, general_id = await _stored(db)
    segment_ids = [segment.segment_id for segment in await documents.segments(parents_id)]
    repo = MergeReadRepo(db)
    for n, document_id in enumerate((parents_id, general_id, parents_id)):
        spans = [TextSpan(document_id, *RANGES[n]), TextSpan(document_id, *RANGES[n + 1])]
        reads = await repo.merge_reads(segment_ids[n % 2 : n % 2 + 1], spans)
        assert dict(reads.texts) == await documents.text_slices(spans)
        assert list(reads.chunks) == await documents.chunks_overlapping(spans)
        assert [segment.segment_id for segment in reads.segments] == [segment_ids[n % 2]]


async def test_merge_reads_of_nothing_reads_nothing(db: Database) -> None:
    with count_statements(db) as statements:
        reads = await MergeReadRepo(db).merge_reads([], [])
    assert (reads.segments, reads.chunks, dict(reads.texts)) == ((), (), {})
    assert statements == []


def _hit(chunk: ChunkRecord, score: float) -> Candidate:
    return chunk_candidate(replace(chunk, title="guide.md"), score, frozenset({"vector"}))


async def test_merge_folds_child_hits_of_an_ingested_parent_child_document_into_widened_parents(
    db: Database, store: WeaviateStore, embedder: OnnxEmbedder, lexical: LexicalAnalyzer
) -> None:
    rule = parse_rule({"mode": "parent_child", "segment": {"max_tokens": 60, "overlap": 0},
                       "child": {"max_tokens": 50, "overlap": 0, "separator": "\n"}})  # fmt: skip
    kb = await KnowledgeBaseRepo(db).create("guide", chunking=rule.to_dict())
    ingestor = DocumentIngestor(DocumentRepo(db), store, embedder, lexical, tiktoken.get_encoding("cl100k_base"))
    result = await ingestor.ingest(kb, SourceFile((GUIDE * 4).encode(), source_uri="upload:guide.md"))
    documents = DocumentRepo(db)
    text = await documents.text(result.document_id)
    segments = await documents.segments(result.document_id)
    chunks = await documents.document_chunks(result.document_id)
    parent_of = {child_id: segment for segment in segments for child_id in segment.child_ids}
    # Two children of the first parent, one of the middle one, all children of the last one.
    picked = [*segments[0].child_ids[:2], *segments[len(segments) // 2].child_ids[:1], *segments[-1].child_ids]
    hits = [_hit(chunk, 1.0 / (rank + 1)) for rank, chunk in enumerate(c for c in chunks if c.chunk_id in picked)]
    assert len(segments) >= 4
    assert len(hits) > 3 == len({parent_of[hit.id].segment_id for hit in hits})
    turn = TurnContext(query="refunds", kb_ids=(kb.id,), reranked=hits)

    with count_statements(db) as statements:
        await Merge(MergeReadRepo(db)).run(turn)

    # One statement for parents, neighbours and texts; a second only for the windows of parents found short.
    assert len(statements) <= 2
    assert len(turn.merged) == 3
    assert [c.score for c in turn.merged] == sorted((c.score for c in turn.merged), reverse=True)
    for merged in turn.merged:
        parent = next(segment for segment in segments if segment.segment_id == merged.id)
        children = [hit for hit in hits if parent_of[hit.id] == parent]
        assert (merged.kind, merged.segment_id, merged.document_id) == ("chunk", parent.segment_id, result.document_id)
        assert merged.score == max(child.score for child in children)
        assert merged.metadata["chunk_ids"] == [child.id for child in children]
        assert merged.text == text[merged.start : merged.end]
        assert merged.start <= parent.start < parent.end <= merged.end
        if "neighbour_ids" in merged.metadata:
            assert len(parent.text) < MergeConfig().short_chars
            assert len(parent.text) < len(merged.text) <= MergeConfig().widen_to
            assert set(merged.metadata["neighbour_ids"]) <= {chunk.chunk_id for chunk in chunks}
        else:
            assert merged.text == parent.text
    assert any("neighbour_ids" in merged.metadata for merged in turn.merged)
    for one, other in combinations(turn.merged, 2):
        assert one.end <= other.start or other.end <= one.start
