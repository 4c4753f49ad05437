"""Merging retrieved hits into passages: children folded into parents, adjacent chunks joined, short ones widened."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from rag.faq.candidate import faq_text
from rag.types import Candidate
from storage.records import ChunkRecord, FaqRecord, MergeReads, SegmentRecord, TextSpan

Range = tuple[int, int]


@dataclass(frozen=True, slots=True)
class MergeConfig:
    """When a passage counts as short and how long widening may make it, in characters."""

    # WeKnora's merge plugin (expandShortContextWithNeighbors): minLen 350, maxLen 850.
    short_chars: int = 350
    widen_to: int = 850

    def __post_init__(self) -> None:
        if not 0 <= self.short_chars <= self.widen_to:
            raise ValueError(f"merge needs 0 <= short_chars <= widen_to, got {self.short_chars} and {self.widen_to}")


class MergeSource(Protocol):
    """What merging reads from storage (met by storage.repos.merge_reads.MergeReadRepo)."""

    async def merge_reads(self, segment_ids: Sequence[str], spans: Sequence[TextSpan]) -> MergeReads:
        """In one read: the stored parents among `segment_ids`, the chunks whose [start, end) intersects a span of
        their document, and each span's stretch of its document's cleaned text (documents it lacks left out)."""
        ...


@dataclass(frozen=True, slots=True)
class TextWindow:
    """A stretch of one document's cleaned text and the offset it starts at."""

    document_id: str
    start: int
    text: str

    @property
    def end(self) -> int:
        """The offset just past the stretch."""
        return self.start + len(self.text)

    def cut(self, start: int, end: int) -> str:
        """The document's text over [start, end), which must lie inside the window."""
        return self.text[start - self.start : end - self.start]


def by_score(candidates: Iterable[Candidate]) -> list[Candidate]:
    """Best first; equal scores keep their order."""
    return sorted(candidates, key=lambda candidate: -candidate.score)


def _chunk_ids(members: Sequence[Candidate]) -> list[str]:
    ids: list[str] = []
    for member in sorted(members, key=lambda candidate: (candidate.position, candidate.start)):
        # A member merged before (a second pass, a cached turn) brings its own sub-chunks.
        ids.extend(member.metadata.get("chunk_ids") or [member.id])
    return list(dict.fromkeys(ids))


def _folded(members: Sequence[Candidate], **fields: Any) -> Candidate:
    """The members as one candidate: the best one's fields and metadata, the highest scores, every leg and sub-chunk."""
    best = max(members, key=lambda candidate: candidate.score)
    model_scores = [member.model_score for member in members if member.model_score is not None]
    return replace(
        best,
        base_score=max(member.base_score for member in members),
        model_score=max(model_scores) if model_scores else None,
        legs=frozenset[str]().union(*(member.legs for member in members)),
        position=min(member.position for member in members),
        metadata={**best.metadata, "chunk_ids": _chunk_ids(members)},
        **fields,
    )


def group_by_parent(children: Sequence[Candidate], parents: Mapping[str, SegmentRecord]) -> list[Candidate]:
    """One candidate per parent of the child hits, in the order of each parent's first child.

    A parent's candidate has the segment's id, text, offsets and kb, `segment_id` set and `kind` "chunk"; its scores
    are its children's highest (`score`, `base_score`, `model_score`), its legs all of theirs, its `position` the
    first child's, its metadata the best child's (title, page) plus "chunk_ids": the children that hit, in document
    order. A child whose parent is not in `parents` (deleted since the search) stays as it is.
    """
    hits: dict[str, list[Candidate]] = {}
    for child in children:
        if child.segment_id is not None and child.segment_id in parents:
            hits.setdefault(child.segment_id, []).append(child)
    result: list[Candidate] = []
    for child in children:
        if child.segment_id is None or child.segment_id not in parents:
            result.append(child)
        elif child.segment_id in hits:
            result.append(_as_parent(parents[child.segment_id], hits.pop(child.segment_id)))
    return result


def _as_parent(parent: SegmentRecord, children: Sequence[Candidate]) -> Candidate:
    return _folded(
        children,
        id=parent.segment_id,
        kb_id=parent.kb_id,
        text=parent.text,
        document_id=parent.document_id,
        segment_id=parent.segment_id,
        start=parent.start,
        end=parent.end,
    )


def adjacent_runs(chunks: Sequence[Candidate]) -> list[list[Candidate]]:
    """Chunks grouped into runs of one document whose ranges overlap or touch, or whose positions follow on.

    Each run is in document order, and runs come in the order of their earliest member in `chunks`. A chunk without
    a document or without a text range (end <= start) is a run of its own: there is nothing to join it by.
    """
    runs: list[list[tuple[int, Candidate]]] = []
    by_document: dict[str, list[tuple[int, Candidate]]] = {}
    for index, chunk in enumerate(chunks):
        if chunk.document_id is None or chunk.end <= chunk.start:
            runs.append([(index, chunk)])
        else:
            by_document.setdefault(chunk.document_id, []).append((index, chunk))
    for members in by_document.values():
        members.sort(key=lambda item: (item[1].start, item[1].end, item[1].position))
        run = [members[0]]
        end, last = members[0][1].end, members[0][1].position
        for index, chunk in members[1:]:
            if chunk.start > end and chunk.position != last + 1:
                runs.append(run)
                run, end, last = [], chunk.end, chunk.position
            run.append((index, chunk))
            end, last = max(end, chunk.end), max(last, chunk.position)
        runs.append(run)
    runs.sort(key=lambda run: min(index for index, _ in run))
    return [[chunk for _, chunk in run] for run in runs]


def run_span(run: Sequence[Candidate]) -> TextSpan:
    """The stretch of its document a run of one document's chunks covers."""
    documents = {chunk.document_id for chunk in run}
    if len(documents) != 1 or None in documents:
        raise ValueError(f"a run spans exactly one document, got {sorted(map(str, documents))}")
    return TextSpan(str(run[0].document_id), min(chunk.start for chunk in run), max(chunk.end for chunk in run))


def run_text(run: Sequence[Candidate]) -> str | None:
    """A run's text from its members' own texts, when they cover its span with no gap (a chunk's text is its
    document's text over its range, so overlaps are cut where the previous chunk ends); None when a gap leaves
    part of the span unread, or a member's text is not its range's."""
    ordered = sorted(run, key=lambda chunk: (chunk.start, chunk.end))
    if any(len(chunk.text) != chunk.end - chunk.start for chunk in ordered):
        return None
    pieces, end = [ordered[0].text], ordered[0].end
    for chunk in ordered[1:]:
        if chunk.start > end:
            return None
        if chunk.end > end:
            pieces.append(chunk.text[end - chunk.start :])
            end = chunk.end
    return "".join(pieces)


def join_run(run: Sequence[Candidate], text: str) -> Candidate:
    """A run as one candidate with `text`, the document's text over the run's span (so overlaps are not repeated).

    It keeps the best member's id, kind, kb and metadata (title, page) plus "chunk_ids": every member's id in
    document order; its scores are the members' highest, its legs all of theirs, its offsets the run's span and its
    `position` the first member's. A run of one is that chunk with "chunk_ids" set.
    """
    return _folded(run, text=text, start=min(chunk.start for chunk in run), end=max(chunk.end for chunk in run))


def fill_faq(candidate: Candidate) -> Candidate:
    """An FAQ hit with its text in the `Q: question` / `Answer: - answer` form, from its metadata.

    Blank answers are dropped. An FAQ whose metadata lacks a question or any answer, and anything that is not an
    FAQ, is returned as is.
    """
    question = candidate.metadata.get("question")
    answers = candidate.metadata.get("answers")
    if candidate.kind != "faq" or not isinstance(question, str) or not isinstance(answers, list | tuple):
        return candidate
    listed = tuple(text for answer in answers if (text := str(answer).strip()))
    if not question.strip() or not listed:
        return candidate
    # faq_text is the one definition of the form; the record carries only what it reads.
    record = FaqRecord(
        id=candidate.id,
        kb_id=candidate.kb_id,
        question=question.strip(),
        similar_questions=(),
        negative_questions=(),
        answers=listed,
        enabled=True,
        content_hash="",
    )
    return replace(candidate, text=faq_text(record))


def _step(chunks: Iterator[ChunkRecord], start: int, end: int, *, backwards: bool) -> tuple[ChunkRecord, Range] | None:
    """The next chunk that grows [start, end) on one side, with the range it grows it to."""
    for chunk in chunks:
        # Chunks already inside the range (nested, or overlapped by the previous step) add nothing.
        if backwards and chunk.start < start:
            return chunk, (chunk.start, end)
        if not backwards and chunk.end > end:
            return chunk, (start, chunk.end)
    return None


def _overlaps(ranges: Iterable[Range], taken: Sequence[Range]) -> bool:
    return any(start < other_end and other_start < end for start, end in ranges for other_start, other_end in taken)


def widen_short(
    candidate: Candidate,
    neighbours: Sequence[ChunkRecord],
    window: TextWindow,
    taken: Sequence[Range] = (),
    config: MergeConfig | None = None,
) -> Candidate:
    """A passage shorter than `short_chars` grown with neighbouring chunks of its document, up to `widen_to` chars.

    Neighbours are added one at a time, alternating before and after, nearest first, while the passage stays within
    `widen_to`. A side stops at its first neighbour that would overrun that, leave `window`, or reach into a range
    of `taken` (text another selected passage holds); the passage must stay one unbroken stretch. The text becomes
    the window's text over the grown range and metadata "neighbour_ids" lists the added chunks in document order.
    Returned as is: FAQs, passages of other documents than the window's, passages already long enough, and those
    whose text is not the window's text at their offsets (built without offsets, or from an older version).
    """
    config = config or MergeConfig()
    if (
        candidate.kind != "chunk"
        or candidate.document_id != window.document_id
        or len(candidate.text) >= config.short_chars
        or not window.start <= candidate.start <= candidate.end <= window.end
        or window.cut(candidate.start, candidate.end) != candidate.text
    ):
        return candidate
    own = [chunk for chunk in neighbours if chunk.document_id == candidate.document_id]
    before = sorted((chunk for chunk in own if chunk.start < candidate.start), key=lambda chunk: -chunk.start)
    after = sorted((chunk for chunk in own if chunk.end > candidate.end), key=lambda chunk: chunk.end)
    start, end = candidate.start, candidate.end
    added: list[ChunkRecord] = []
    sides = {True: iter(before), False: iter(after)}
    while sides:
        for backwards in tuple(sides):
            step = _step(sides[backwards], start, end, backwards=backwards)
            if step is None:
                del sides[backwards]
                continue
            chunk, (new_start, new_end) = step
            if (
                new_end - new_start > config.widen_to
                or not window.start <= new_start <= new_end <= window.end
                or _overlaps([(new_start, start), (end, new_end)], taken)
            ):
                # The passage must stay one unbroken stretch, so a side that cannot take its next chunk is done.
                del sides[backwards]
                continue
            start, end = new_start, new_end
            added.append(chunk)
    if not added:
        return candidate
    neighbour_ids = [chunk.chunk_id for chunk in sorted(added, key=lambda chunk: (chunk.start, chunk.position))]
    return replace(
        candidate,
        text=window.cut(start, end),
        start=start,
        end=end,
        metadata={**candidate.metadata, "neighbour_ids": neighbour_ids},
    )


def covering_text(span: TextSpan, texts: Mapping[TextSpan, str]) -> str | None:
    """`span`'s text cut from a read stretch of its document that holds it whole, if any."""
    for read, text in texts.items():
        window = TextWindow(read.document_id, read.start, text)
        if read.document_id == span.document_id and window.start <= span.start and span.end <= window.end:
            return window.cut(span.start, span.end)
    return None
