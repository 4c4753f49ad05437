"""`ragbot reindex --kb NAME`: rebuild a knowledge base's search index from SQL, with a progress bar."""

from __future__ import annotations

import sys
from typing import TextIO

from bot.app.services import Services
from bot.errors import UserFacingError
from bot.knowledge.index_lock import HeldIndex
from bot.words import messages
from rag.reindex import Reindexer, ReindexResult
from storage.records import KnowledgeBaseRecord
from storage.repos.index_source import IndexSourceRepo
from storage.repos.jobs import UNFINISHED

_BAR = 20


class ProgressBar:
    """One line rewritten in place on a terminal; elsewhere a line at every tenth of the way."""

    def __init__(self, stream: TextIO, name: str) -> None:
        self._stream = stream
        self._name = name
        self._tty = stream.isatty()
        self._tenth = -1

    async def __call__(self, stage: str, done: int, total: int) -> None:
        filled = _BAR * done // total if total else _BAR
        line = f"{self._name}: {stage} [{'#' * filled}{'.' * (_BAR - filled)}] {done}/{total}"
        if self._tty:
            self._stream.write("\r\033[K" + line)
        elif (tenth := 10 * done // total if total else 10) != self._tenth:
            self._tenth = tenth
            self._stream.write(line + "\n")
        self._stream.flush()

    def end(self) -> None:
        if self._tty:
            self._stream.write("\r\033[K")


def reindexer(services: Services) -> Reindexer:
    """The rebuilder of the running services' index from their SQL store."""
    return Reindexer(services.store, IndexSourceRepo(services.db), services.faqs, services.embedder, services.lexical)


def note_outdated_index(services: Services, out: TextIO = sys.stderr) -> None:
    """One line to the person when the index predates this version and `ragbot reindex` would fix it."""
    missing, stale = services.store.missing_properties(), services.store.stale_terms()
    if missing or stale:
        out.write(f"ragbot: {messages.index_outdated(missing, stale)}\n")


async def run_reindex(services: Services, kb_name: str, out: TextIO = sys.stderr) -> int:
    """Rebuild `kb_name`'s index objects from SQL into a new generation and switch searches to it at the end.

    Interrupted, it leaves the old index answering as before (and the next run drops what this one built).
    """
    kb = await services.knowledge.find(kb_name)
    async with services.index_lock.hold() as held:
        result = await _rebuild(services, kb, out, held)
    out.write(messages.reindexed(result.rebuilt, result.chunks, result.faq_questions) + "\n")
    return 0


async def _rebuild(services: Services, kb: KnowledgeBaseRecord, out: TextIO, held: HeldIndex) -> ReindexResult:
    """The rebuild proper, run while this process holds the reindex lease (no job starts meanwhile); it switches
    generations only once the lease is confirmed still held."""
    busy = await services.job_repo.count(statuses=UNFINISHED)
    if busy:
        # What they write would land in the old generation only, and be gone after the switch. Counted once the
        # lease is held: a job queued from here on waits for the lease before it starts (JobRunner before_start).
        raise UserFacingError(messages.reindex_busy(busy))
    missing, stale = services.store.missing_properties(), services.store.stale_terms()
    if missing or stale:
        out.write(messages.index_rebuild_all(missing, stale) + "\n")
    for model in sorted(set(services.store.foreign_vectors().values())):
        out.write(messages.reembedding_all(model, services.vector_model) + "\n")
    bar = ProgressBar(out, kb.name)
    try:
        result = await reindexer(services).reindex(kb, await services.knowledge.all(), bar, before_switch=held.confirm)
    finally:
        bar.end()
    return result
