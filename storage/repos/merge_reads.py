"""MERGE's reads on the answer path: parents, neighbouring chunks and text stretches in one SQL statement."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import Integer, String, and_, bindparam, cast, func, literal, null, or_, union_all
from sqlalchemy import select as sql_select
from sqlalchemy.sql import CompoundSelect, Select
from sqlmodel import col

from storage.db import Database
from storage.models import Chunk, Document, Segment
from storage.records import ChunkRecord, MergeReads, SegmentRecord, TextSpan
from storage.repos.document_writes import live_chunk, live_segment
from storage.repos.documents import chunk_record, segment_record

# Spans per statement: each adds an OR term and a UNION arm, and SQLite caps expression depth at 1000.
# A turn has a few dozen candidates at most, so one statement is the rule.
_SPAN_BATCH = 100
# Built statements kept by shape (spans, overlapping spans, parents or not); a turn's shapes repeat, so a few dozen
# cover them, and SQLAlchemy's compiled cache then recognises each one without recompiling.
_STATEMENT_CACHE = 128


def _text(value: Any) -> Any:
    return cast(value, String)


def _segments_arm() -> Select[Any]:
    return (
        sql_select(
            literal("segment", String).label("kind"),
            literal(-1, Integer).label("slot"),
            col(Segment.id),
            col(Segment.document_id),
            col(Segment.kb_id),
            _text(null()).label("segment_id"),
            col(Segment.position),
            col(Segment.start_offset),
            col(Segment.end_offset),
            col(Segment.text),
            _text(col(Segment.child_ids)).label("child_ids"),
            _text(col(Segment.meta)).label("meta"),
        )
        .join(Document, live_segment())
        .where(col(Segment.id).in_(bindparam("segment_ids", expanding=True)))
    )


def _chunks_arm(count: int) -> Select[Any]:
    overlaps = [
        and_(
            col(Chunk.document_id) == bindparam(f"c{n}_document", type_=String),
            col(Chunk.start_offset) < bindparam(f"c{n}_end", type_=Integer),
            col(Chunk.end_offset) > bindparam(f"c{n}_start", type_=Integer),
        )
        for n in range(count)
    ]
    return (
        sql_select(
            literal("chunk", String).label("kind"),
            literal(-1, Integer).label("slot"),
            col(Chunk.id),
            col(Chunk.document_id),
            col(Chunk.kb_id),
            _text(col(Chunk.segment_id)).label("segment_id"),
            col(Chunk.position),
            col(Chunk.start_offset),
            col(Chunk.end_offset),
            col(Chunk.text),
            _text(null()).label("child_ids"),
            _text(col(Chunk.meta)).label("meta"),
        )
        .join(Document, live_chunk())
        .where(or_(*overlaps))
    )


def _slice_arm(slot: int) -> Select[Any]:
    # SUBSTR counts characters on both backends, and the database cuts: the whole text never loads.
    start, end = bindparam(f"t{slot}_start", type_=Integer), bindparam(f"t{slot}_end", type_=Integer)
    return sql_select(
        literal("text", String).label("kind"),
        literal(slot, Integer).label("slot"),
        col(Document.id),
        col(Document.id).label("document_id"),
        col(Document.kb_id),
        _text(null()).label("segment_id"),
        literal(0, Integer).label("position"),
        start.label("start_offset"),
        end.label("end_offset"),
        func.substr(
            col(Document.text),
            bindparam(f"t{slot}_from", type_=Integer),
            bindparam(f"t{slot}_length", type_=Integer),
            type_=String,
        ).label("text"),
        _text(null()).label("child_ids"),
        _text(null()).label("meta"),
    ).where(col(Document.id) == bindparam(f"t{slot}_document", type_=String))


@lru_cache(maxsize=_STATEMENT_CACHE)
def _statement(spans: int, overlapping: int, parents: bool) -> Select[Any] | CompoundSelect[Any]:
    """One statement for this shape; the spans and parent ids arrive as bound parameters (see `_parameters`).

    Building and compiling a UNION arm per span was nearly all of MERGE's time, so both happen once per shape.
    """
    arms = [_slice_arm(slot) for slot in range(spans)]
    if overlapping:
        arms.append(_chunks_arm(overlapping))
    if parents:
        arms.append(_segments_arm())
    return union_all(*arms) if len(arms) > 1 else arms[0]


def _parameters(
    segment_ids: Sequence[str], spans: Sequence[TextSpan], overlapping: Sequence[TextSpan]
) -> dict[str, Any]:
    parameters: dict[str, Any] = {"segment_ids": list(segment_ids)} if segment_ids else {}
    for slot, span in enumerate(spans):
        parameters[f"t{slot}_document"] = span.document_id
        parameters[f"t{slot}_start"] = span.start
        parameters[f"t{slot}_end"] = span.end
        parameters[f"t{slot}_from"] = span.start + 1
        parameters[f"t{slot}_length"] = span.end - span.start
    for n, span in enumerate(overlapping):
        parameters[f"c{n}_document"] = span.document_id
        parameters[f"c{n}_start"] = span.start
        parameters[f"c{n}_end"] = span.end
    return parameters


def _json(value: str | None, empty: Any) -> Any:
    return json.loads(value) if value else empty


class MergeReadRepo:
    """The segment, chunk and document tables as MERGE reads them: everything a turn needs in one statement."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def merge_reads(self, segment_ids: Sequence[str], spans: Sequence[TextSpan]) -> MergeReads:
        """The stored parents among `segment_ids`; each chunk whose [start, end) intersects a span of its document,
        once, by document then position; and each span's stretch of its document's cleaned text (cut short at the
        text's end as a Python slice is; documents SQL lacks left out). Raises ValueError for a span with
        start < 0 or end < start.
        """
        ids = list(dict.fromkeys(segment_ids))
        unique = list(dict.fromkeys(spans))
        for span in unique:
            if not 0 <= span.start <= span.end:
                raise ValueError(f"a text span needs 0 <= start <= end, got {span}")
        segments: dict[str, SegmentRecord] = {}
        chunks: dict[str, ChunkRecord] = {}
        texts: dict[TextSpan, str] = {}
        async with self._db.session() as session:
            connection = await session.connection()
            for first in range(0, max(1, len(unique)), _SPAN_BATCH):
                batch = unique[first : first + _SPAN_BATCH]
                # An empty span intersects nothing, though "starts before its end, ends after its start" says so.
                overlapping = [span for span in batch if span.start < span.end]
                parents = ids if first == 0 else []
                if not batch and not parents:
                    continue
                statement = _statement(len(batch), len(overlapping), bool(parents))
                rows = (await connection.execute(statement, _parameters(parents, batch, overlapping))).all()
                for row in rows:
                    if row.kind == "text":
                        texts[batch[row.slot]] = row.text
                    elif row.kind == "chunk":
                        chunks[row.id] = chunk_record(row, _json(row.meta, {}))
                    else:
                        segments[row.id] = segment_record(row, _json(row.child_ids, []), _json(row.meta, {}))
        return MergeReads(
            segments=tuple(segments.values()),
            chunks=tuple(sorted(chunks.values(), key=lambda chunk: (chunk.document_id, chunk.position))),
            texts=texts,
        )
