"""What a command may do: act on its chat (ChatControl, met by the conversation manager) and use the parts it names.

Commands never see the manager or the service bundle; the composition root builds CommandParts once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from bot.knowledge.bases import KnowledgeBases
from bot.knowledge.graph import GraphBuilder
from bot.knowledge.index_lock import IndexLock
from bot.knowledge.jobs import JobRunner
from bot.knowledge.misses import MissReports
from bot.types import ConversationKey, SourceLink
from rag.ingest.faq_index import FaqImporter
from storage.records import ConversationRecord, JobRecord
from storage.repos.bindings import BindingRepo
from storage.repos.faqs import FaqRepo
from storage.repos.jobs import JobRepo
from storage.repos.schedules import ScheduleRepo


class ChatControl(Protocol):
    """What a command may do to the chat it was sent in."""

    async def existing(self, key: ConversationKey) -> ConversationRecord | None:
        """The stored conversation, or None (never created by asking)."""
        ...

    async def reset(self, key: ConversationKey) -> None:
        """Start the conversation over (`/new`)."""
        ...

    async def stop(self, key: ConversationKey, conversation_id: str) -> bool:
        """Stop the answer being written (by this process or another); False when none is."""
        ...

    async def readable_kb_ids(self, key: ConversationKey) -> list[str]:
        """The knowledge bases the chat reads."""
        ...

    def tenant(self, key: ConversationKey) -> str:
        """The tenant the chat belongs to ('' for the operator)."""
        ...

    async def missing_kb_names(self, key: ConversationKey) -> list[str]:
        """The knowledge bases the chat reads by default that do not exist."""
        ...

    def may_read(self, platform: str, kb_name: str) -> bool:
        """Whether chats on `platform` may be bound to `kb_name`."""
        ...

    def allowed_kbs(self, platform: str) -> tuple[str, ...] | None:
        """The only knowledge bases `platform`'s chats may read, or None when any."""
        ...

    def knowledge_changed(self) -> None:
        """A knowledge base was created: names resolved before are resolved again."""
        ...

    async def last_question(self, key: ConversationKey, author: str) -> str:
        """The newest question `author` asked in the conversation since it was last started over ("" when none)."""
        ...

    async def last_sources(self, key: ConversationKey) -> list[SourceLink]:
        """The sources of the conversation's last answer."""
        ...

    def watch_jobs(self, watcher: Callable[[JobRecord], None]) -> Callable[[], None]:
        """Call `watcher` on every job change until the returned function is called."""
        ...


@dataclass(frozen=True, slots=True)
class Uploads:
    """Where files sent with a command are kept, and how large one may be."""

    folder: Path
    max_bytes: int


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class CommandParts:
    """The parts the built-in commands use."""

    knowledge: KnowledgeBases
    bindings: BindingRepo
    faqs: FaqRepo
    faq_importer: FaqImporter
    jobs: JobRunner
    job_repo: JobRepo
    index_lock: IndexLock
    uploads: Uploads
    schedules: ScheduleRepo
    # Whether the service has a web search provider (WEB_SEARCH_PROVIDER): `/web on` means something only then.
    web_search: bool = False
    # What "5 min ago" counts from (injected, so /jobs is tested without waiting).
    clock: Callable[[], datetime] = _utcnow
    # Knowledge bases' entity graphs (`/graph on|off`); None where the caller has none (then /graph says so).
    graph: GraphBuilder | None = None
    # What went wrong in a chat lately (`/stats`); None where the caller has no embedder (then /stats says so).
    misses: MissReports | None = None
