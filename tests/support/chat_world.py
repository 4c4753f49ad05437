"""A conversation manager's world over a real database: the repositories and parts Services would build."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bot.app.settings import Settings
from bot.chat.parts import ChatParts
from bot.chat.sources import SourceBook
from bot.commands.parts import CommandParts, Uploads
from bot.knowledge.bases import KnowledgeBases
from bot.knowledge.jobs import JobRunner
from storage.repos.bindings import BindingRepo
from storage.repos.config_epoch import ConfigEpochRepo
from storage.repos.conversations import ConversationRepo
from storage.repos.documents import DocumentRepo
from storage.repos.faqs import FaqRepo
from storage.repos.jobs import JobRepo
from storage.repos.posted import PostedRepo
from storage.repos.schedules import ScheduleRepo
from tests.support.chat import ScriptedAnswerer


@dataclass
class ChatWorld:
    """The parts of Services the manager and its commands use, over a real database."""

    settings: Settings
    conversations: ConversationRepo
    bindings: BindingRepo
    knowledge: KnowledgeBases
    documents: DocumentRepo
    faqs: FaqRepo
    job_repo: JobRepo
    jobs: JobRunner
    epochs: ConfigEpochRepo
    schedules: ScheduleRepo
    posted: PostedRepo
    answerer: ScriptedAnswerer = field(default_factory=ScriptedAnswerer)
    faq_importer: Any = None
    index_lock: Any = None
    graph: Any = None
    now: datetime | None = None
    # Whether the service has a web search provider (`/web on` is refused without one).
    web_search: bool = False
    # `/stats`'s reports (bot.knowledge.misses.MissReports); None, /stats says it has none.
    misses: Any = None

    def chat_parts(self) -> ChatParts:
        """The manager's parts over these repositories and the current answerer."""
        return ChatParts(
            conversations=self.conversations,
            settings=self.bindings,
            knowledge=self.knowledge,
            answerer=self.answerer,
            jobs=self.jobs,
            sources=SourceBook(self.documents, self.faqs),
            epochs=self.epochs,
            posted=self.posted,
        )

    def command_parts(self) -> CommandParts:
        """The commands' parts over these repositories."""
        limits = self.settings.ingestion_limits()
        return CommandParts(
            knowledge=self.knowledge,
            bindings=self.bindings,
            faqs=self.faqs,
            faq_importer=self.faq_importer,
            jobs=self.jobs,
            job_repo=self.job_repo,
            index_lock=self.index_lock,
            uploads=Uploads(self.settings.data_dir / "uploads", limits.max_file_bytes),
            schedules=self.schedules,
            clock=lambda: self.now or datetime.now(UTC),
            web_search=self.web_search,
            graph=self.graph,
            misses=self.misses,
        )


async def no_work(job: Any, progress: Any) -> dict[str, Any]:
    """A job runner's work that does nothing (the chat tests queue jobs, they do not run them)."""
    return {}
