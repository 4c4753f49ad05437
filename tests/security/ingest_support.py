"""Shared parts of the ingestion drills: a running service with two chats, hostile files, readers that misbehave."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.app.manager import build_manager
from bot.app.services import Services, build_services
from bot.chat.manager import ChatPolicy, ConversationManager
from bot.commands.registry import parse_command
from bot.knowledge.ingestion import IngestionWork
from bot.knowledge.jobs import JobRunner
from bot.knowledge.uploads import UploadFolder
from bot.types import Attachment, ConversationKey, IncomingMessage, UserRef
from rag.ingest.documents import DocumentIngestor, SourceFile
from rag.ingest.extract import extract
from rag.ingest.sandbox import ExtractionSandbox
from rag.ingest.types import ExtractedDocument, Section
from storage.records import JobRecord, KnowledgeBaseRecord
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from tests.conftest import EmbeddedSettings
from tests.support.chat import RecordingTarget

ADMIN = UserRef("admin-1")
PERSON = UserRef("person-1")
CHAT_A = ConversationKey("test", "ws", "chat-a")
CHAT_B = ConversationKey("test", "ws", "chat-b")
PARKING = "Visitors park in the Marigold garage on level minus two."


def read_forever(data: bytes, **_: Any) -> ExtractedDocument:
    """A reader whose parser never returns: what a pathological file does to a real one."""
    while True:
        pass


def read_or_hang(data: bytes, **options: Any) -> ExtractedDocument:
    """The usual reader, except for files starting with HANG (never returns), HOG (takes memory), PID (its pid)."""
    if data.startswith(b"HANG"):
        return read_forever(data)
    if data.startswith(b"PID"):
        return ExtractedDocument((Section(str(os.getpid())),), "text/plain")
    if data.startswith(b"HOG"):
        hog = [bytearray(64 * 1024 * 1024) for _ in range(1024)]  # 64 GiB, a chunk at a time
        raise AssertionError(f"allocated {len(hog)} chunks past the memory limit")
    return extract(data, **options)


def deep_json(depth: int = 900, copies: int = 250) -> bytes:
    """JSON objects nested `depth` deep: ~0.4 MB that indenting turned into ~362 MB of text."""
    unit = b'{"k":' * depth + b"1" + b"}" * depth
    return b"[" + b",".join([unit] * copies) + b"]"


def header_repeating_csv(rows: int = 400, columns: int = 200) -> bytes:
    """Long column names over one-letter cells: naming every cell multiplied the text ~40 times."""
    header = ",".join(f"the name of column number {index} of this very wide sheet" for index in range(columns))
    return (header + "\n" + "\n".join([",".join(["a"] * columns)] * rows)).encode()


def many_paragraphs(count: int = 400_000) -> bytes:
    """`<p>a</p>` over and over: BeautifulSoup held ~140 bytes of memory for every byte of it."""
    return b"<html><body>" + b"<p>a</p>" * count + b"</body></html>"


@dataclass
class World:
    """A running service with two chats: A bound to knowledge base alpha (empty), B to bravo (one document)."""

    services: Services
    manager: ConversationManager
    alpha: KnowledgeBaseRecord
    bravo: KnowledgeBaseRecord
    seen: dict[str, JobRecord] = dataclasses.field(default_factory=dict)
    changed: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)

    async def saw(self, job: JobRecord) -> None:
        """A job listener: keeps each job as it last changed."""
        self.seen[job.id] = job
        self.changed.set()

    async def until_a_job(self, *statuses: str) -> JobRecord:
        """The first job seen in one of `statuses`, waiting on job changes (fails the test after 30 s)."""
        async with asyncio.timeout(30):
            while True:
                found = [job for job in self.seen.values() if job.status in statuses]
                if found:
                    return found[0]
                self.changed.clear()
                await self.changed.wait()

    async def ingest(self, name: str, data: bytes, key: ConversationKey = CHAT_A) -> RecordingTarget:
        """An admin's /ingest of one file in chat `key`; the target holds the status message as it was edited."""

        async def read() -> bytes:
            return data

        target = RecordingTarget()
        files = (Attachment(name, len(data), "", read),)
        message = IncomingMessage(key, "", ADMIN, "/ingest", attachments=files, command=parse_command("/ingest"))
        await self.manager.handle(message, target)
        return target

    async def command(self, text: str, key: ConversationKey = CHAT_A, user: UserRef = ADMIN) -> str:
        """A command's reply, as its sender reads it."""
        target = RecordingTarget()
        await self.manager.handle(IncomingMessage(key, "", user, text, command=parse_command(text)), target)
        return "\n".join(target.replies())

    async def ask(self, question: str, key: ConversationKey = CHAT_B) -> RecordingTarget:
        """A person's question in chat `key`."""
        target = RecordingTarget()
        await self.manager.handle(IncomingMessage(key, "", PERSON, question), target)
        return target

    async def jobs(self) -> list[JobRecord]:
        """Every job, newest first."""
        return await self.services.job_repo.recent(limit=None)

    def uploads(self) -> Path:
        """The folder uploads are saved in."""
        return self.services.settings.data_dir / "uploads"


@asynccontextmanager
async def running_world(
    data_dir: Path, embedded_settings: EmbeddedSettings, *, reader: str | None = None, **settings: Any
) -> AsyncIterator[World]:
    """The service on `settings`, its jobs running; with `reader`, files are read by that function instead."""
    async with build_services(embedded_settings(data_dir, **settings)) as services:
        alpha = await services.knowledge.create("alpha", {})
        bravo = await services.knowledge.create("bravo", {})
        await services.ingestor.ingest(bravo, SourceFile(f"# Parking\n\n{PARKING}".encode(), "upload:parking.md"))
        sandbox = None
        if reader is not None:
            sandbox = ExtractionSandbox(services.settings.extract_sandbox(), reader=reader)
            services = _reading_with(services, sandbox)
        for key, kb in ((CHAT_A, alpha), (CHAT_B, bravo)):
            await services.bindings.bind(key.platform, key.workspace, key.chat, [kb.id])
        manager = build_manager(services, ChatPolicy(admins={"test": frozenset({ADMIN.id})}))
        world = World(services, manager, alpha, bravo)
        services.jobs.subscribe(world.saw)
        await services.jobs.start()
        try:
            yield world
        finally:
            await services.jobs.stop()
            if sandbox is not None:
                await sandbox.close()


def _reading_with(services: Services, sandbox: ExtractionSandbox) -> Services:
    """The same services, their documents read through `sandbox`."""
    settings = services.settings
    ingestor = DocumentIngestor(
        services.documents,
        services.store,
        services.embedder,
        services.lexical,
        services.tokens.encoding,
        settings.extract_limits(),
        sandbox=sandbox,
    )
    work = IngestionWork(KnowledgeBaseRepo(services.db), ingestor, services.faq_importer, settings.ingestion_limits())
    jobs = JobRunner(services.job_repo, work, batch=work.run_batch, uploads=UploadFolder(settings.data_dir / "uploads"))
    replaced = dataclasses.replace(services, ingestor=ingestor, jobs=jobs)
    replaced.answerer = services.answerer  # set after construction, so replace() leaves it out
    return replaced
