"""Extraction in a child process: a memory limit, a deadline and a cap on the text, so a hostile file costs one job.

A parser that amplifies (deep JSON, a header repeated into every cell, a page of a million tags) or never returns
would otherwise hold the service's memory, a worker and a job lease. Here each file is read by a child process
(rag.ingest.extract_child) whose address space is limited; the parent streams its text in pieces and kills it past
the deadline or the cap. Children are kept between files, so a document pays a pipe round trip, not a start.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import sys
from dataclasses import dataclass
from typing import Any

from rag.errors import (
    CorruptDocument,
    DocumentTooLarge,
    EncryptedDocument,
    ExtractionError,
    FetchError,
    NoTextFound,
    OcrTimeout,
    UnsupportedType,
)
from rag.ingest import wire
from rag.ingest.extract import DEFAULT_LIMITS, ExtractLimits
from rag.ingest.types import Cell, ExtractedDocument, ExtractedTable, Section

log = logging.getLogger(__name__)

_MIB = 1024 * 1024
DEFAULT_READER = "rag.ingest.extract:extract"
# Python, its libraries and a parser's first allocations need a few seconds on a busy host: not the file's fault.
_START_SECONDS = 60.0
# Closing a child's input ends it; one that does not go within this is killed.
_CLOSE_SECONDS = 5.0
# A piece is at most 1M characters (4 MB of UTF-8); a bigger payload is a child gone wrong.
_MAX_PIECE_BYTES = 8 * _MIB
# What a killed child's unread output is read in, to be dropped.
_DROP_BYTES = 256 * 1024
# A child is retired after this many files, or once its address space has grown by this share of the room its
# limit left it at start: what a process keeps of its heap counts against the limit of the next file it reads.
_FILES_PER_CHILD = 500
_GROWN_SHARE = 0.5
_ERRORS = {
    cls.__name__: cls
    for cls in (
        ExtractionError,
        UnsupportedType,
        DocumentTooLarge,
        EncryptedDocument,
        CorruptDocument,
        NoTextFound,
        FetchError,
        OcrTimeout,
    )
}


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """What one file may cost: the child's address space, the seconds it may take, the characters it may yield."""

    memory_bytes: int = 1024 * _MIB
    seconds: float = 120.0
    max_chars: int = 20_000_000
    # How many idle children are kept (the ingestion concurrency); more are started when needed and ended after.
    idle: int = 2


def too_long(max_chars: int) -> DocumentTooLarge:
    """The error for a file whose text is over the cap."""
    return DocumentTooLarge(
        f"The file's text is longer than {max_chars:,} characters (INGEST_MAX_TEXT_CHARS): split it into smaller files",
        reason="text_too_long",
        max_chars=max_chars,
    )


def too_slow(seconds: float) -> ExtractionError:
    """The error for a file that took past the deadline to read."""
    return ExtractionError(
        f"Reading the file took longer than {seconds:g} s (INGEST_EXTRACT_SECONDS): split it into smaller files",
        reason="extract_timeout",
        seconds=round(seconds),
    )


def too_big_in_memory(memory_bytes: int) -> ExtractionError:
    """The error for a file whose reading needed more memory than the limit."""
    return ExtractionError(
        f"Reading the file needed more than {memory(memory_bytes)} of memory (INGEST_EXTRACT_MEMORY_MB): "
        "split it into smaller files",
        reason="extract_memory",
        memory=memory(memory_bytes),
    )


def memory(size: int) -> str:
    """A memory limit as a person reads it: '1 GiB', '512 MiB'."""
    if size % (1024 * _MIB) == 0:
        return f"{size // (1024 * _MIB)} GiB"
    return f"{size / _MIB:.0f} MiB"


class _Child:
    """One extraction process and how many files it has read."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.files = 0
        # Its address space once started: what it grows past that, it may keep for the next file.
        self.baseline = 0
        assert process.stdin is not None
        assert process.stdout is not None
        self.stdin = process.stdin
        self.stdout = process.stdout

    async def read(self) -> wire.Frame:
        """The next frame; ExtractionError when the child ended or sent something that is no frame."""
        try:
            head, size = wire.lengths(await self.stdout.readexactly(wire.PREFIX_SIZE))
            if size > _MAX_PIECE_BYTES:
                raise ValueError(f"frame payload of {size} bytes")
            header = wire.decode_header(await self.stdout.readexactly(head))
            return header, await self.stdout.readexactly(size)
        except asyncio.IncompleteReadError as exc:
            status = await self.process.wait()
            raise ExtractionError(
                f"the file reader stopped unexpectedly (exit status {status}): see the server log",
                reason="reader_failed",
            ) from exc
        except ValueError as exc:
            raise ExtractionError(
                f"the file reader sent a malformed reply ({exc}): see the server log", reason="reader_failed"
            ) from exc

    async def end(self) -> None:
        """Close its input and wait for it to exit; kill it if it does not."""
        with contextlib.suppress(ConnectionError):
            self.stdin.close()
        try:
            async with asyncio.timeout(_CLOSE_SECONDS):
                await self.process.wait()
        except TimeoutError:
            await self.kill()

    async def kill(self) -> None:
        """End it now, dropping what it wrote and no one read."""
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        # Python 3.11's wait() returns only once every pipe of the child has closed, and asyncio stops reading a pipe
        # whose buffer is full (a reply refused mid-way): unread, it never closes. Reading it to its end closes it.
        await asyncio.gather(self._drop_output(), self.process.wait())

    async def _drop_output(self) -> None:
        while await self.stdout.read(_DROP_BYTES):
            pass


class ExtractionSandbox:
    """Extracts files in child processes under `limits`; call `close` to end the children it keeps.

    `reader` names the function a child runs ("module:function", rag.ingest.extract:extract by default); another
    one serves tests and benchmarks.
    """

    def __init__(
        self, limits: SandboxLimits = SandboxLimits(), *, reader: str = DEFAULT_READER, python: str = sys.executable
    ) -> None:
        self.limits = limits
        self._reader = reader
        self._python = python
        self._idle: list[_Child] = []
        self._closed = False

    async def extract(
        self,
        data: bytes,
        *,
        filename: str | None = None,
        content_type: str | None = None,
        limits: ExtractLimits = DEFAULT_LIMITS,
    ) -> ExtractedDocument:
        """What `rag.ingest.extract.extract` gives, read in a child; ExtractionError naming the limit a file broke."""
        child = await self._take()
        healthy = False
        try:
            async with asyncio.timeout(self.limits.seconds):
                await self._send(child, data, filename, content_type, limits)
                document, healthy = await self._receive(child)
            return document
        except TimeoutError as exc:
            log.warning("extract=timeout filename=%s seconds=%g", filename, self.limits.seconds)
            raise too_slow(self.limits.seconds) from exc
        except ExtractionError as exc:
            # The file was bad, not the child: it reads the next one. A broken limit or reply ends it below.
            healthy = exc.reason not in {"text_too_long", "extract_memory", "reader_failed"}
            raise
        finally:
            await self._give_back(child, healthy)

    async def close(self) -> None:
        """End every idle child; the sandbox starts new ones if used again."""
        idle, self._idle = self._idle, []
        await asyncio.gather(*(child.end() for child in idle))

    async def _take(self) -> _Child:
        while self._idle:
            child = self._idle.pop()
            if child.process.returncode is None:
                return child
        return await self._start()

    async def _start(self) -> _Child:
        process = await asyncio.create_subprocess_exec(
            self._python,
            "-m",
            "rag.ingest.extract_child",
            "--memory-bytes",
            str(self.limits.memory_bytes),
            "--reader",
            self._reader,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        child = _Child(process)
        try:
            async with asyncio.timeout(_START_SECONDS):
                header, _ = await child.read()
        except BaseException:
            await child.kill()
            raise
        if header.get("kind") != "ready":
            await child.kill()
            raise ExtractionError("the file reader did not start: see the server log", reason="reader_failed")
        baseline = header.get("address_space")
        child.baseline = baseline if isinstance(baseline, int) else 0
        log.info("extract_child=started pid=%d", process.pid)
        return child

    async def _give_back(self, child: _Child, healthy: bool) -> None:
        child.files += 1
        keep = healthy and child.files < _FILES_PER_CHILD and len(self._idle) < self.limits.idle
        if keep and child.process.returncode is None:
            self._idle.append(child)
        elif healthy:
            await child.end()
        else:
            await child.kill()

    @staticmethod
    async def _send(
        child: _Child, data: bytes, filename: str | None, content_type: str | None, limits: ExtractLimits
    ) -> None:
        header = {
            "filename": filename,
            "content_type": content_type,
            "limits": dataclasses.asdict(limits),
        }
        try:
            child.stdin.write(wire.encode(header, data))
            await child.stdin.drain()
        except ConnectionError as exc:
            raise ExtractionError(
                "the file reader stopped unexpectedly: see the server log", reason="reader_failed"
            ) from exc

    async def _receive(self, child: _Child) -> tuple[ExtractedDocument, bool]:
        """The document the child streams back, and whether the child stays healthy enough to read another."""
        sections: list[Section] = []
        tables: list[ExtractedTable] = []
        pieces: list[str] = []
        chars = table_bytes = 0
        while True:
            header, payload = await child.read()
            kind = header.get("kind")
            if kind == "text":
                piece = payload.decode("utf-8", errors="replace")
                chars += len(piece)
                if chars > self.limits.max_chars:
                    log.warning("extract=too_long max_chars=%d", self.limits.max_chars)
                    raise too_long(self.limits.max_chars)
                pieces.append(piece)
            elif kind == "table":
                # A table holds what its text holds, in about as many bytes as characters: the same cap, doubled.
                table_bytes += len(payload)
                if table_bytes > 2 * self.limits.max_chars:
                    log.warning("extract=too_long max_chars=%d", self.limits.max_chars)
                    raise too_long(self.limits.max_chars)
                tables.append(_table(header, payload))
            elif kind == "section":
                sections.append(Section("".join(pieces), _mapping(header.get("metadata"))))
                pieces = []
            elif kind == "done":
                document = ExtractedDocument(
                    sections=tuple(sections),
                    mime_type=str(header.get("mime_type", "")),
                    title=str(header.get("title", "")),
                    metadata=_mapping(header.get("metadata")),
                    tables=tuple(tables),
                )
                size = header.get("address_space")
                room = self.limits.memory_bytes - child.baseline
                grown = isinstance(size, int) and size - child.baseline > room * _GROWN_SHARE
                return document, not grown
            elif kind == "error":
                raise _rebuilt(header)
            elif kind == "memory":
                log.warning("extract=out_of_memory limit=%d", self.limits.memory_bytes)
                raise too_big_in_memory(self.limits.memory_bytes)
            elif kind == "failed":
                raise ExtractionError(
                    f"the file reader failed ({header.get('type', 'error')}): see the server log",
                    reason="reader_failed",
                )
            else:
                raise ExtractionError(f"the file reader sent {kind!r}: see the server log", reason="reader_failed")


def _table(header: dict[str, Any], payload: bytes) -> ExtractedTable:
    """A table frame's rows, each cell kept only when it is a plain JSON scalar."""
    try:
        rows = json.loads(payload)
    except ValueError as exc:
        raise ExtractionError("the file reader sent a damaged table", reason="reader_failed") from exc
    if not isinstance(rows, list):
        raise ExtractionError("the file reader sent a damaged table", reason="reader_failed")
    return ExtractedTable(
        str(header.get("name", "")),
        tuple(tuple(_scalar(cell) for cell in row) for row in rows if isinstance(row, list)),
    )


def _scalar(value: Any) -> Cell:
    return value if value is None or isinstance(value, str | int | float | bool) else str(value)


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _rebuilt(header: dict[str, Any]) -> ExtractionError:
    """The extraction error the child raised, as its own class with its reason and details."""
    cls = _ERRORS.get(str(header.get("type")), ExtractionError)
    details = {
        str(name): value
        for name, value in _mapping(header.get("details")).items()
        if isinstance(value, str | int) and not isinstance(value, bool)
    }
    return cls(str(header.get("message", "the file could not be read")), reason=str(header.get("reason")), **details)
