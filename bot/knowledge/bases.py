"""Knowledge-base operations that span SQL and the index: create, rename, delete, documents, crash repair."""

from __future__ import annotations

import logging
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.errors import InvalidKnowledgeBaseName, KnowledgeBaseExists, UserFacingError
from bot.knowledge.index_lock import IndexLock
from bot.knowledge.tenancy import OPERATOR, is_qualified, split_qualified
from rag.errors import InvalidRule
from rag.ingest.cleanup import discard_uncommitted, settle, shielded
from rag.ingest.rules import parse_rule
from rag.ports import TableStore, VectorStore
from storage.errors import DuplicateName, NotFound
from storage.process import may_be_running, this_process
from storage.records import DocumentRecord, KnowledgeBaseRecord
from storage.repos.documents import DocumentRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.repos.schedules import ScheduleRepo

log = logging.getLogger(__name__)

MAX_NAME_LENGTH = 64
# How long a delete's or a repair's hold on a document lasts should its process stall: far beyond the batches' seconds.
_NOTE_EXPIRY = timedelta(minutes=30)


@dataclass(frozen=True, slots=True)
class KnowledgeBaseInfo:
    """A knowledge base with what it holds."""

    kb: KnowledgeBaseRecord
    counts: dict[str, int]


def _check_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise InvalidKnowledgeBaseName("A knowledge base needs a name.", MAX_NAME_LENGTH)
    if len(name) > MAX_NAME_LENGTH or any(char.isspace() and char != " " for char in name):
        raise InvalidKnowledgeBaseName(
            f"Knowledge base names are at most {MAX_NAME_LENGTH} characters on one line.", MAX_NAME_LENGTH
        )
    if is_qualified(name):
        # "slack:T1/x" names workspace T1's knowledge base x in the terminal: no name may read like one.
        raise InvalidKnowledgeBaseName("A knowledge base name cannot start with platform:workspace/.", MAX_NAME_LENGTH)
    return name


def qualified(kb: KnowledgeBaseRecord) -> str:
    """A knowledge base's name as the terminal writes it: bare for the operator's, owner/name for a tenant's."""
    return f"{kb.owner}/{kb.name}" if kb.owner else kb.name


class KnowledgeBases:
    """The operations admins run on knowledge bases and their documents."""

    def __init__(
        self,
        repo: KnowledgeBaseRepo,
        documents: DocumentRepo,
        store: VectorStore,
        index_lock: IndexLock | None = None,
        schedules: ScheduleRepo | None = None,
        tables: TableStore | None = None,
    ) -> None:
        self._repo = repo
        self._documents = documents
        self._store = store
        self._index_lock = index_lock
        self._schedules = schedules
        self._tables = tables
        self._owner = this_process()

    async def _ensure_writable(self) -> None:
        if self._index_lock is not None:
            await self._index_lock.ensure_writable()

    async def create(
        self, name: str, rule: dict[str, Any] | None = None, description: str = "", *, owner: str = OPERATOR
    ) -> KnowledgeBaseRecord:
        """A new knowledge base of `owner`; the rule is validated with errors that name the field."""
        try:
            chunking = parse_rule(rule).to_dict()
        except InvalidRule as exc:
            raise UserFacingError(f"Invalid chunking rule: {exc}") from exc
        try:
            return await self._repo.create(_check_name(name), chunking=chunking, description=description, owner=owner)
        except DuplicateName as exc:
            raise KnowledgeBaseExists(name) from exc

    async def find(self, name: str) -> KnowledgeBaseRecord:
        """By name as the terminal writes it ("handbook" is the operator's, "slack:T1/handbook" workspace T1's),
        with a message that lists what exists when it is not found."""
        owner, bare = split_qualified(name)
        try:
            return await self._repo.by_name(bare, owner)
        except NotFound as exc:
            names = ", ".join(qualified(kb) for kb in await self._repo.all()) or "none yet"
            raise UserFacingError(f"No knowledge base named {name!r} (existing: {names}).") from exc

    async def named(self, name: str, tenant: str = OPERATOR) -> KnowledgeBaseRecord | None:
        """The knowledge base `tenant` knows by this name (its own first, then one granted it), or None.

        For chats: None says nothing of the knowledge bases of other tenants, even of one with this name.
        """
        return await self._repo.visible_named(tenant, name)

    async def all(self) -> list[KnowledgeBaseRecord]:
        """Every knowledge base of every tenant (the terminal's view)."""
        return await self._repo.all()

    async def visible(self, tenant: str) -> list[KnowledgeBaseRecord]:
        """The knowledge bases a tenant's chats may know of: those it owns or was granted, by name."""
        return await self._repo.visible(tenant)

    async def visible_ids(self, tenant: str, kb_ids: Sequence[str]) -> set[str]:
        """Those of `kb_ids` a tenant's chats may read."""
        return await self._repo.visible_ids(tenant, kb_ids)

    async def info(self, name: str) -> KnowledgeBaseInfo:
        """A knowledge base, named as the terminal writes it, and its counts."""
        return await self.info_of(await self.find(name))

    async def info_of(self, kb: KnowledgeBaseRecord) -> KnowledgeBaseInfo:
        """A knowledge base and its counts."""
        return KnowledgeBaseInfo(kb, await self._repo.stats(kb.id))

    async def grant(self, name: str, tenant: str) -> bool:
        """Let `tenant` read the knowledge base `name` (the terminal's naming); False when it already could."""
        kb = await self.find(name)
        if kb.owner == tenant:
            return False
        return await self._repo.grant(kb.id, tenant)

    async def revoke(self, name: str, tenant: str) -> bool:
        """Take back a grant; False when `tenant` had none."""
        return await self._repo.revoke((await self.find(name)).id, tenant)

    async def grants(self) -> dict[str, list[str]]:
        """Per knowledge-base id, the tenants granted it."""
        return await self._repo.grants()

    async def rename(self, name: str, new_name: str) -> KnowledgeBaseRecord:
        """Give a knowledge base a new name."""
        kb = await self.find(name)
        try:
            return await self._repo.rename(kb.id, _check_name(new_name))
        except DuplicateName as exc:
            raise KnowledgeBaseExists(new_name) from exc

    async def delete(self, name: str) -> None:
        """Remove the knowledge base from the index first, then from SQL (a retry finishes either half)."""
        kb = await self.find(name)
        await self._ensure_writable()
        if self._tables is not None:
            await self._tables.drop_kb(kb.id)
        removed = await self._store.delete_kb(kb.id)
        await self._repo.delete(kb.id)
        log.info("kb=deleted id=%s index_objects=%d", kb.id, removed)

    async def set_tables(self, kb_id: str, *, on: bool) -> None:
        """Switch data analysis of the knowledge base's spreadsheets on or off."""
        await self._repo.set_tables(kb_id, on)

    async def tables_on(self, kb_ids: Sequence[str]) -> set[str]:
        """Those of `kb_ids` switched on for data analysis."""
        return await self._repo.tables_on(kb_ids)

    async def documents(self, name: str) -> list[DocumentRecord]:
        """The documents of a knowledge base."""
        return await self._documents.in_kb((await self.find(name)).id)

    async def delete_document(self, name: str, document_id: str) -> DocumentRecord:
        """Remove one document from SQL and the index.

        It is hidden at once and claimed for this delete, so an ingestion of it already under way is refused at its
        switch (and removes what it wrote), and a later one waits; its rows and index objects then go in bounded
        batches. Should this process die meanwhile, the next start's repair finishes the delete.
        """
        kb = await self.find(name)
        try:
            document = await self._documents.get(document_id)
        except NotFound as exc:
            raise UserFacingError(f"No document {document_id!r} in {name!r}.") from exc
        if document.kb_id != kb.id:
            raise UserFacingError(f"No document {document_id!r} in {name!r}.")
        await self._ensure_writable()
        if self._tables is not None:
            # First: should the file be held, nothing is deleted yet and the delete can simply be asked again.
            await self._tables.drop_documents([document.id])
        try:
            _, note = await self._documents.begin_delete(
                document.id, owner=self._owner, expires_at=datetime.now(UTC) + _NOTE_EXPIRY
            )
        except NotFound as exc:
            raise UserFacingError(f"No document {document_id!r} in {name!r}.") from exc
        try:
            await settle(self._documents, self._store, document.id)
        except BaseException:
            # Still hidden and marked: a retry of the delete, or the next start's repair, finishes it.
            await shielded(self._documents.expire_index_write(note, datetime.now(UTC)))
            raise
        await self._documents.end_index_write(note)
        if self._schedules is not None:
            # A scheduled page's next sync would ingest the deleted document again.
            await self._schedules.remove_source(kb.id, document.source_uri)
        return document

    async def repair_index(self) -> int:
        """Remove from the index, and from SQL, what a crash or a failed clean-up left there without a live version
        behind it; returns how many index objects went.

        Leftovers: chunk ids of replaced versions listed under a document (by versions before rows carried theirs);
        index writes whose writer is gone before it committed or cleaned up; and documents with rows of versions
        that are not live, left mid-delete, or whose first version never went live. Ids a live version holds are
        never removed, and a document another live writer holds is left to it.
        """
        removed = 0
        for document_id, chunk_ids in (await self._documents.pending_index_deletes()).items():
            removed += await self._holding([document_id], self._drop_pending(document_id, chunk_ids))
        now = datetime.now(UTC)
        for write in await self._documents.unfinished_index_writes():
            if write.expires_at > now and may_be_running(write.owner):
                continue
            taken = await self._documents.take_over_index_write(
                write.id, owner=self._owner, expires_at=now + _NOTE_EXPIRY, now=now
            )
            if taken is None:
                continue
            removed += await discard_uncommitted(self._documents, self._store, taken.chunk_ids)
            for document_id in taken.document_ids:
                removed += await settle(self._documents, self._store, document_id)
            await self._documents.end_index_write(taken.id)
        for document_id in await self._documents.writer.unsettled():
            removed += await self._holding([document_id], settle(self._documents, self._store, document_id))
        if removed:
            log.warning("repair=index removed=%d", removed)
        return removed

    async def _drop_pending(self, document_id: str, chunk_ids: Sequence[str]) -> int:
        removed = await discard_uncommitted(self._documents, self._store, chunk_ids)
        await self._documents.forget_pending(document_id, chunk_ids)
        return removed

    async def _holding(self, document_ids: Sequence[str], work: Coroutine[Any, Any, int]) -> int:
        """Run `work` while holding the documents' claim; 0 without running it when another live owner holds one."""
        now = datetime.now(UTC)
        note = await self._documents.claim_index_write(
            [], document_ids, owner=self._owner, expires_at=now + _NOTE_EXPIRY, now=now
        )
        if note is None:
            work.close()
            return 0
        try:
            return await work
        finally:
            await self._documents.end_index_write(note)
