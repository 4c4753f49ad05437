"""What `ragbot eval` shares across set kinds: the product's retriever, and a corpus in a throw-away knowledge base."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, TextIO

from bot.app.services import Services
from rag.ingest.documents import IngestResult, SourceFile
from rag.retrieval import Retriever
from storage.records import KnowledgeBaseRecord

# Documents handed to the ingestor at once: it embeds and stores them in its own batches (BatchLimits); progress
# is written at every multiple of _PROGRESS_EVERY, which this divides.
_INGEST_AT_ONCE: Final = 100
_PROGRESS_EVERY: Final = 500


@dataclass(frozen=True, slots=True)
class IngestedCorpus:
    """A corpus in a knowledge base: the base's id, and the dataset document id of each indexed chunk and of each
    stored document."""

    kb_id: str
    chunk_to_doc: dict[str, str]
    document_to_doc: dict[str, str]


def retriever_for(services: Services) -> Retriever:
    """A retriever over the running services, configured as the answer pipeline's."""
    return Retriever(
        services.store,
        services.embedder,
        services.lexical,
        services.documents,
        services.faqs,
        services.settings.retrieval(),
        questions=services.embedder.transient,
    )


# The 256-token chunks the retrieval and FAQ sets have always been measured with, so their figures compare over time.
MEASURED_RULE: Final[Mapping[str, Any]] = MappingProxyType({"segment": {"max_tokens": 256, "overlap": 25}})


async def throwaway_kb(
    services: Services, folder: Path, rule: Mapping[str, Any] | None = MEASURED_RULE
) -> KnowledgeBaseRecord:
    """A new knowledge base named after `folder`, chunked by `rule` (None: the product's default, as a team gets)."""
    name = f"eval-{folder.name}-{uuid.uuid4().hex[:8]}"
    return await services.knowledge.create(name, dict(rule) if rule is not None else None)


@asynccontextmanager
async def ingested_corpus(
    services: Services,
    folder: Path,
    corpus: Sequence[Mapping[str, Any]],
    out: TextIO,
    rule: Mapping[str, Any] | None = MEASURED_RULE,
) -> AsyncIterator[IngestedCorpus]:
    """`corpus` rows ({"id", "title", "text"}) ingested as documents into a throw-away knowledge base chunked by
    `rule`, removed again afterwards; progress goes to `out` every 500 documents."""
    kb = await throwaway_kb(services, folder, rule)
    try:
        for start in range(0, len(corpus), _INGEST_AT_ONCE):
            sources = [_source(row) for row in corpus[start : start + _INGEST_AT_ONCE]]
            for outcome in await services.ingestor.ingest_many(kb, sources):
                if not isinstance(outcome, IngestResult):
                    raise outcome
            done = start + len(sources)
            if done % _PROGRESS_EVERY == 0:
                out.write(f"  {folder.name}: {done}/{len(corpus)} documents ingested\n")
                out.flush()
        chunk_to_doc, document_to_doc = {}, {}
        for document in await services.documents.in_kb(kb.id):
            dataset_id = document_to_doc[document.id] = document.source_uri.removeprefix("eval:")
            for chunk in await services.documents.document_chunks(document.id):
                chunk_to_doc[chunk.chunk_id] = dataset_id
        yield IngestedCorpus(kb.id, chunk_to_doc, document_to_doc)
    finally:
        await services.knowledge.delete(kb.name)


def _source(row: Mapping[str, Any]) -> SourceFile:
    text = f"{row.get('title') or ''}\n\n{row['text']}".strip()
    return SourceFile(text.encode(), source_uri=f"eval:{row['id']}", filename=f"{row['id']}.txt")
