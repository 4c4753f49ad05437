"""The retention sweep: old conversations removed (their figures kept as daily tallies), expired states, stale
command events and schedule ticks, uploads of ended jobs, and the embedding cache kept within age and size."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.knowledge.uploads import UploadFolder
from storage.repos.jobs import JobRepo
from storage.repos.retention import RetentionRepo

log = logging.getLogger(__name__)

# A redelivered command event arrives within minutes; a day of them is plenty to run each once.
_EVENTS_KEPT = timedelta(days=1)
# A tick only has to outlive the firing of every process's clock for it.
_TICKS_KEPT = timedelta(days=2)


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """How long things are kept; 0 days keeps conversations (or cached embeddings) for ever."""

    conversation_days: int = 0
    embedding_days: int = 0
    embedding_entries: int = 2_000_000


class Retention:
    """Runs one sweep; each part in its own transaction(s), so one failing does not undo the others."""

    def __init__(
        self, repo: RetentionRepo, policy: RetentionPolicy, *, jobs: JobRepo, uploads: UploadFolder | None = None
    ) -> None:
        self._repo = repo
        self._policy = policy
        self._jobs = jobs
        self._uploads = uploads

    async def sweep(self, now: datetime | None = None) -> str:
        """Remove what is past its time; a one-line summary of what went."""
        now = now or datetime.now(UTC)
        conversations = messages = 0
        if self._policy.conversation_days:
            cutoff = now - timedelta(days=self._policy.conversation_days)
            conversations, messages = await self._repo.remove_conversations(cutoff)
        expired = await self._repo.remove_expired(now, events_before=now - _EVENTS_KEPT, ticks_before=now - _TICKS_KEPT)
        embedding_cutoff = now - timedelta(days=self._policy.embedding_days or 36_500)
        embeddings = await self._repo.prune_embeddings(embedding_cutoff, self._policy.embedding_entries)
        uploads = await self._uploads.sweep(self._jobs) if self._uploads is not None else 0
        summary = (
            f"{conversations} conversations ({messages} messages), {embeddings} cached embeddings, "
            f"{uploads} upload folders, {expired.oauth_states} OAuth states, {expired.command_events} command events "
            "removed"
        )
        log.info("retention=swept %s", summary)
        return summary
