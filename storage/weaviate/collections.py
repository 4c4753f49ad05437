"""The names of ragbot's Weaviate collections and of the properties read back from hits, apart from their
definitions: naming one imports no Weaviate client (~0.45 s), so the layers above refer to them at no start-up
cost."""

from __future__ import annotations

from enum import StrEnum


class Collection(StrEnum):
    """The two collections ragbot keeps in Weaviate."""

    CHUNKS = "RagbotChunk"
    FAQ_QUESTIONS = "RagbotFaqQuestion"


BM25_PROPERTY = "bm25_text"
TITLE_PROPERTY = "title"
# A chunk's metadata (page, slide, headers) as a JSON object in text: display only, never filtered on.
META_PROPERTY = "meta"
