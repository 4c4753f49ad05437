"""Index objects: chunks and FAQ question variants as Weaviate stores them, and chunks read back from hits."""

from __future__ import annotations

import json
from collections.abc import Container, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from storage.records import ChunkRecord, FaqQuestionRecord, SearchHit
from storage.weaviate.collections import BM25_PROPERTY, META_PROPERTY, TITLE_PROPERTY

if TYPE_CHECKING:
    from weaviate.collections.classes.data import DataObject
    from weaviate.collections.classes.internal import Object

# The name Weaviate gives a self-provided vector when the collection names none.
_DEFAULT_VECTOR = "default"


def chunk_object(chunk: ChunkRecord, vector: Sequence[float], leave_out: Container[str] = ()) -> DataObject[Any, Any]:
    """A chunk with everything SEARCH needs to answer from the hit alone: text, offsets, title, metadata.

    `leave_out` names properties an older collection lacks: written anyway, Weaviate's auto-schema would add them
    to it and the index would no longer say that it needs a rebuild.
    """
    properties = _chunk_properties(chunk)
    # Imported where objects are written: reading hits back (rag's retrieval) needs no Weaviate client classes.
    from weaviate.collections.classes.data import DataObject

    return DataObject(
        uuid=chunk.chunk_id,
        vector=list(vector),
        properties={key: value for key, value in properties.items() if key not in leave_out},
    )


def _chunk_properties(chunk: ChunkRecord) -> dict[str, Any]:
    return {
        "kb_id": chunk.kb_id,
        "document_id": chunk.document_id,
        "segment_id": chunk.segment_id or "",
        "chunk_id": chunk.chunk_id,
        "chunk_type": chunk.chunk_type,
        "position": chunk.position,
        "start": chunk.start,
        "end": chunk.end,
        "text": chunk.text,
        BM25_PROPERTY: chunk.bm25_text,
        TITLE_PROPERTY: chunk.title,
        META_PROPERTY: json.dumps(chunk.metadata, ensure_ascii=False, sort_keys=True),
    }


def faq_question_object(question: FaqQuestionRecord, vector: Sequence[float]) -> DataObject[Any, Any]:
    """One FAQ question variant."""
    # Imported where objects are written: reading hits back (rag's retrieval) needs no Weaviate client classes.
    from weaviate.collections.classes.data import DataObject

    return DataObject(
        uuid=question.variant_id,
        vector=list(vector),
        properties={
            "kb_id": question.kb_id,
            "faq_id": question.faq_id,
            "variant_id": question.variant_id,
            "kind": question.kind,
            "text": question.text,
            BM25_PROPERTY: question.bm25_text,
        },
    )


def hit_vector(obj: Object[Any, Any]) -> list[float] | None:
    """The object's self-provided vector, when the query asked for it."""
    vectors: Mapping[str, Any] = obj.vector or {}
    vector = vectors.get(_DEFAULT_VECTOR)
    return [float(value) for value in vector] if isinstance(vector, list) else None


def chunk_from_hit(hit: SearchHit) -> ChunkRecord | None:
    """The chunk a search hit carries, or None when the object lacks a property (written by an older ragbot).

    `bm25_text` is left empty: answering never needs it.
    """
    props = hit.properties
    title, meta, text = props.get(TITLE_PROPERTY), props.get(META_PROPERTY), props.get("text")
    if not isinstance(title, str) or not isinstance(meta, str) or not isinstance(text, str):
        return None
    try:
        metadata = json.loads(meta) if meta else {}
    except ValueError:
        return None
    return ChunkRecord(
        chunk_id=str(props.get("chunk_id") or hit.id),
        kb_id=str(props["kb_id"]),
        document_id=str(props["document_id"]),
        segment_id=str(props.get("segment_id") or "") or None,
        position=int(props.get("position") or 0),
        start=int(props.get("start") or 0),
        end=int(props.get("end") or 0),
        text=text,
        bm25_text="",
        chunk_type=str(props.get("chunk_type") or "text"),
        metadata=metadata if isinstance(metadata, dict) else {},
        title=title,
    )
