"""A hand fake of our MergeSource over in-memory documents, and the laid-out texts, parents and FAQ it serves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

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


FAQ = FaqRecord(
    "f1", "kb", "How long do refunds take?", (), (), ("Five working days.", "To the original card."), True, ""
)


SIZES = [150] * 7  # pieces 0..6; the hit is piece 3


def widening_source(sizes: Sequence[int] = SIZES) -> FakeSource:
    source = FakeSource()
    text, ranges = laid_out(sizes)
    source.add("d", text, ranges)
    return source
