"""Removing what no live document version holds, from the index and from SQL, without touching what one does.

Every function here runs while its caller holds the documents' claim (DocumentRepo.claim_index_write, a delete's
note or a repair's take-over), so no other writer is putting the same ids back meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence
from typing import TypeVar

from rag.ports import VectorStore
from storage.errors import NotFound
from storage.repos.document_writes import DELETING, PENDING, ROWS_PER_TRANSACTION
from storage.repos.documents import DocumentRepo
from storage.weaviate.collections import Collection

log = logging.getLogger(__name__)

T = TypeVar("T")

# A delete finds rows again only when a writer it overtook wrote one more batch; a few rounds see that out.
_SETTLE_ROUNDS = 3


async def discard_uncommitted(documents: DocumentRepo, store: VectorStore, chunk_ids: Sequence[str]) -> int:
    """Remove from the index those of `chunk_ids` that no live document version holds; returns how many went."""
    committed = await documents.committed_chunk_ids(chunk_ids)
    loose = [chunk_id for chunk_id in chunk_ids if chunk_id not in committed]
    return await store.delete_ids(Collection.CHUNKS, loose) if loose else 0


async def settle(documents: DocumentRepo, store: VectorStore, document_id: str) -> int:
    """Remove the document's rows of versions that are not live, with their index objects, a batch at a time; and
    a document being deleted, or whose first version never went live, altogether. Returns the index objects removed.
    """
    removed = 0
    for _ in range(_SETTLE_ROUNDS):
        removed += await _drop_unlive(documents, store, document_id)
        try:
            document = await documents.get(document_id)
        except NotFound:
            return removed
        if document.status not in (DELETING, PENDING):
            return removed
        # Belt and braces: objects a writer this delete overtook put in the index under the document's id.
        removed += await store.delete_document(document.kb_id, document_id)
        if await documents.writer.drop_document_row(document_id):
            return removed
    log.warning("settle=unfinished document=%s rounds=%d", document_id, _SETTLE_ROUNDS)
    return removed


async def _drop_unlive(documents: DocumentRepo, store: VectorStore, document_id: str) -> int:
    removed = 0
    writer = documents.writer
    for version in await writer.unlive_versions(document_id):
        # The index first: a crash in between leaves rows that name what to remove, never index objects nothing names.
        while chunk_ids := await writer.chunk_ids(document_id, version, ROWS_PER_TRANSACTION):
            removed += await store.delete_ids(Collection.CHUNKS, chunk_ids)
            if not await writer.drop_chunks(document_id, version, chunk_ids):
                break  # the version went live meanwhile: nothing of it is to go
        await writer.drop_segments(document_id, version)
    return removed


async def shielded(work: Awaitable[T]) -> T:
    """Await `work` to its end even when the caller is cancelled meanwhile; the cancellation is raised after it."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while not task.done():
        try:
            # Unlike awaiting the task, wait() leaves it running when this caller is cancelled.
            await asyncio.wait({task})
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        if not task.cancelled() and task.exception() is not None:
            log.warning("cleanup=failed_while_cancelled reason=%s", task.exception())
        raise asyncio.CancelledError
    return task.result()
