"""A large ingestion beside the conversations (`--with-ingestion`): the document, and running it in the background.

The document is Markdown with one short section per chunk (the structure splitter keeps each heading's section a
chunk of its own), about words of its own so no chat question finds it, ingested into a knowledge base of its own
(ARCHIVE_KB) that no chat reads. (a) ingests it in the bench process through the services' DocumentIngestor, the
service's own path (extraction child, split, embed, Weaviate upsert, SQL write); (b) runs `ragbot ingest` as a
second process on the same data dir and database while `ragbot serve` answers.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bench.log_counts import IN_INGESTION, LogTally, TallyHandler, tally_log, total
from bot.app.services import Services
from rag.ingest.documents import SourceFile
from storage.records import KnowledgeBaseRecord

ARCHIVE_KB = "archive"

_ARCHIVE_TEXT = re.compile(r"Archive [a-z] entry \d+:")

_WORDS = ("ledger", "shelf", "crate", "inventory", "pallet", "barcode", "dock", "freight", "aisle", "manifest")


def archive_document(sections: int, variant: str) -> bytes:
    """`sections` Markdown sections of one sentence each: one chunk apiece. `variant` makes the text its own."""
    lines = [f"# Warehouse archive {variant}\n"]
    for number in range(sections):
        word, other = _WORDS[number % 10], _WORDS[(number // 10) % 10]
        lines.append(
            f"## Entry {variant}-{number}\n\nArchive {variant} entry {number}: {word} {number % 997} holds the "
            f"{other} of row {number // 997}.\n"
        )
    return "\n".join(lines).encode()


def is_archive_text(text: str) -> bool:
    """Whether an embedded text is one of the archive's chunks (as the embedder gets it: heading path first)."""
    return _ARCHIVE_TEXT.search(text) is not None


@dataclass(frozen=True, slots=True)
class IngestionFigures:
    """How the background ingestion went: its outcome, its seconds, what its own log said."""

    outcome: str
    seconds: float
    logged: LogTally

    def summary(self) -> str:
        """One line for the report."""
        return (
            f"{self.outcome} in {self.seconds:.0f} s; its own log: {self.logged.locked} 'database is locked', "
            f"{self.logged.pool_timeouts} pool timeouts"
        )


class Background(Protocol):
    """An ingestion run beside the bursts."""

    async def start(self) -> None:
        """Start it."""
        ...

    def running(self) -> bool:
        """Whether it is still going."""
        ...

    async def finish(self) -> IngestionFigures:
        """Wait for its end and say how it went."""
        ...


class InProcessIngestion:
    """(a): the document through the services' DocumentIngestor, in a task of the bench (= service) process."""

    def __init__(self, services: Services, data: bytes, name: str, log: TallyHandler) -> None:
        self._services = services
        self._source = SourceFile(data, source_uri=name, filename=name)
        self._log = log
        self._task: asyncio.Task[str] | None = None
        self._started = 0.0

    async def start(self) -> None:
        kb = await self._services.knowledge.find(ARCHIVE_KB)
        self._started = time.monotonic()
        self._task = asyncio.create_task(self._ingest(kb), name="bench-ingestion")

    async def _ingest(self, kb: KnowledgeBaseRecord) -> str:
        IN_INGESTION.set(True)  # this task's context only: its log records count apart from the chat's
        result = await self._services.ingestor.ingest(kb, self._source)
        return f"{result.chunks} chunks indexed"

    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def finish(self) -> IngestionFigures:
        assert self._task is not None
        try:
            outcome = await self._task
        except Exception as exc:
            outcome = f"failed: {exc!r}"[:200]
        return IngestionFigures(outcome, time.monotonic() - self._started, total(self._log.ingestion))


class CliIngestion:
    """(b): `ragbot ingest FILE --kb archive` as a process of its own beside `ragbot serve`."""

    def __init__(self, env: dict[str, str], work: Path, data: bytes, name: str) -> None:
        self._env = {**env, "LOG_LEVEL": "WARNING"}
        self._work = work
        self._file = work / name
        self._file.write_bytes(data)
        self._log = work / "ingest.log"
        self._process: asyncio.subprocess.Process | None = None
        self._started = 0.0

    async def start(self) -> None:
        self._started = time.monotonic()
        with self._log.open("ab") as output:
            self._process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bot.cli.main",
                "ingest",
                str(self._file),
                "--kb",
                ARCHIVE_KB,
                env=self._env,
                cwd=self._work,
                stdout=output,
                stderr=output,
            )

    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def finish(self) -> IngestionFigures:
        assert self._process is not None
        code = await self._process.wait()
        tail = self._log.read_text(errors="replace").strip().splitlines()[-1:] or [""]
        outcome = "exit 0" if code == 0 else f"exit {code}: {tail[0][:160]}"
        return IngestionFigures(outcome, time.monotonic() - self._started, tally_log(self._log, 0))
