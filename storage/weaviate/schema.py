"""Collection definitions: chunks and FAQ questions, self-provided vectors, jieba-tokenised BM25 text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from weaviate.classes.config import DataType, Property, Tokenization

from storage.weaviate.collections import BM25_PROPERTY as BM25_PROPERTY
from storage.weaviate.collections import META_PROPERTY as META_PROPERTY
from storage.weaviate.collections import TITLE_PROPERTY as TITLE_PROPERTY
from storage.weaviate.collections import Collection as Collection

# What the BM25 text holds: the version of the caller's analyzer that cut it (rag.lexical.LexicalAnalyzer.VERSION;
# storage cannot import rag, so a unit test keeps the two equal). Each collection records it in its description;
# one without the record was made before version 2. Query terms cut by another version miss the indexed ones.
BM25_TERMS_VERSION: Final = 2
_TERMS_RECORD: Final = re.compile(r"bm25 terms version (\d+)")
# Whose vectors a collection holds: vectors of two embedding models in one index cannot be compared.
_VECTORS_RECORD: Final = re.compile(r";? ?vectors (\S+)")


def _keyword(name: str) -> Property:
    # FIELD tokenization keeps ids whole, so an equality filter never matches a part of an id.
    return Property(name=name, data_type=DataType.TEXT, tokenization=Tokenization.FIELD, index_searchable=False)


def _int(name: str) -> Property:
    return Property(name=name, data_type=DataType.INT, index_range_filters=False)


def _display_text(name: str = "text") -> Property:
    # Stored for display only (text, title, JSON metadata): never searched or filtered on.
    return Property(name=name, data_type=DataType.TEXT, index_searchable=False, index_filterable=False)


def _bm25_text() -> Property:
    # The text arrives already cut by jieba and joined by spaces; LOWERCASE splits on
    # whitespace only and folds ASCII case, so the server never re-segments Chinese.
    return Property(
        name=BM25_PROPERTY,
        data_type=DataType.TEXT,
        tokenization=Tokenization.LOWERCASE,
        index_filterable=False,
    )


@dataclass(frozen=True, slots=True)
class CollectionSpec:
    """Everything needed to create one collection."""

    name: Collection
    properties: tuple[Property, ...]


CHUNKS = CollectionSpec(
    Collection.CHUNKS,
    (
        _keyword("kb_id"),
        _keyword("document_id"),
        _keyword("segment_id"),
        _keyword("chunk_id"),
        _keyword("chunk_type"),
        _int("position"),
        _int("start"),
        _int("end"),
        _display_text(),
        _bm25_text(),
        # Added in issue 11 so SEARCH builds candidates from hits alone; an older index lacks them.
        _display_text(TITLE_PROPERTY),
        _display_text(META_PROPERTY),
    ),
)

FAQ_QUESTIONS = CollectionSpec(
    Collection.FAQ_QUESTIONS,
    (
        _keyword("kb_id"),
        _keyword("faq_id"),
        _keyword("variant_id"),
        _keyword("kind"),
        _display_text(),
        _bm25_text(),
    ),
)

ALL = (CHUNKS, FAQ_QUESTIONS)


def spec_of(collection: Collection) -> CollectionSpec:
    """The definition of one of the collections."""
    return next(spec for spec in ALL if spec.name is collection)


def description(vector_model: str = "") -> str:
    """A new collection's description: it records the BM25 terms version and, when known, whose vectors it holds."""
    text = f"ragbot index; bm25 terms version {BM25_TERMS_VERSION}"
    return with_vector_model(text, vector_model) if vector_model else text


def vector_model(description: str | None) -> str | None:
    """The embedding model whose vectors a collection's description says it holds (None when it says none)."""
    found = _VECTORS_RECORD.search(description or "")
    return found.group(1) if found else None


def with_vector_model(description: str | None, model: str) -> str:
    """`description` recording `model` as the one whose vectors the collection holds (its other records kept)."""
    kept = _VECTORS_RECORD.sub("", description or "").rstrip("; ")
    return f"{kept}; vectors {model}" if kept else f"vectors {model}"


def terms_version(description: str | None) -> int:
    """The BM25 terms version a collection's description records (1 when it records none: made before versions)."""
    found = _TERMS_RECORD.search(description or "")
    return int(found.group(1)) if found else 1


def missing_properties(spec: CollectionSpec, present: set[str]) -> tuple[str, ...]:
    """The properties `spec` defines that a live collection with properties `present` lacks (an older index)."""
    return tuple(prop.name for prop in spec.properties if prop.name not in present)
