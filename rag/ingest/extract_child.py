"""The extraction child process: reads files from its parent, extracts each under a memory limit, streams the text back.

Run as `python -m rag.ingest.extract_child --memory-bytes N [--reader module:function]`. It serves one request
after another until its input closes; the parent kills it past its deadline or its text cap. Every message is a
frame (rag.ingest.wire); text goes back in pieces so that the parent can stop reading at its cap.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import logging
import os
import resource
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

from rag.errors import ExtractionError
from rag.ingest import wire
from rag.ingest.extract import ExtractLimits
from rag.ingest.extractors.limits import limits_from_wire
from rag.ingest.types import ExtractedDocument

log = logging.getLogger(__name__)

Reader = Callable[..., ExtractedDocument]
# A piece of text small enough that the parent never holds much past its cap.
_PIECE_CHARS = 1_000_000


def load_reader(spec: str) -> Reader:
    """The function a "module:function" spec names: the extractor the child runs (rag.ingest.extract:extract)."""
    module, _, name = spec.partition(":")
    reader: Reader = getattr(importlib.import_module(module), name)
    return reader


def serve(reader: Reader, requests: BinaryIO, replies: BinaryIO) -> None:
    """Answer requests until the parent closes the input."""
    while (request := wire.read_frame(requests)) is not None:
        header, data = request
        limits = limits_from_wire(header["limits"])
        _answer(reader, data, header.get("filename"), header.get("content_type"), limits, replies)


def _answer(
    reader: Reader,
    data: bytes,
    filename: str | None,
    content_type: str | None,
    limits: ExtractLimits,
    replies: BinaryIO,
) -> None:
    out_of_memory = False
    try:
        document = reader(data, filename=filename, content_type=content_type, limits=limits)
    except MemoryError:
        # Reported once the handler has let go of the frames that held the memory.
        out_of_memory = True
    except ExtractionError as exc:
        error = {"type": type(exc).__name__, "message": str(exc), "reason": exc.reason, "details": dict(exc.details)}
        wire.write_frame(replies, {"kind": "error", **error})
        return
    except Exception as exc:
        # Part of the job boundary, moved into this process: a parser's bug fails this file alone.
        log.exception("extract=failed filename=%s", filename)
        wire.write_frame(replies, {"kind": "failed", "type": type(exc).__name__})
        return
    if out_of_memory:
        wire.write_frame(replies, {"kind": "memory"})
        return
    _send(document, replies)


def _send(document: ExtractedDocument, replies: BinaryIO) -> None:
    for index, section in enumerate(document.sections):
        text = section.text
        for start in range(0, len(text), _PIECE_CHARS):
            wire.write_frame(replies, {"kind": "text", "section": index}, text[start : start + _PIECE_CHARS].encode())
        wire.write_frame(replies, {"kind": "section", "section": index, "metadata": _plain(section.metadata)})
    for table in document.tables:
        # JSON keeps a cell's kind (number, text, empty) and runs no code in the parent.
        rows = json.dumps(table.rows, ensure_ascii=False).encode()
        wire.write_frame(replies, {"kind": "table", "name": table.name}, rows)
    done = dataclasses.replace(document, sections=(), tables=())
    wire.write_frame(
        replies,
        {
            "kind": "done",
            "mime_type": done.mime_type,
            "title": done.title,
            "metadata": _plain(done.metadata),
            "address_space": address_space(),
        },
    )


def _plain(metadata: Any) -> dict[str, Any]:
    """Metadata as JSON holds it: what extractors give is text, numbers and lists already; anything else as text."""
    plain = (str, int, float, bool, list)
    return {str(key): value if isinstance(value, plain) else str(value) for key, value in dict(metadata).items()}


def address_space() -> int:
    """This process's address space now, in bytes: what RLIMIT_AS counts, and what the next file finds taken.

    Not ru_maxrss: Linux carries the parent's peak over fork and exec, so a child of a big service would seem big.
    """
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


def limit_memory(limit: int) -> None:
    """Cap this process's address space: an allocation past it raises MemoryError instead of starving the host."""
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main(argv: list[str] | None = None) -> None:
    """Serve extraction requests on stdin and stdout."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memory-bytes", type=int, required=True)
    parser.add_argument("--reader", default="rag.ingest.extract:extract")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="extract-child %(levelname)s %(message)s")
    # The frames own stdout: whatever a library prints goes to stderr instead.
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    reader = load_reader(args.reader)
    limit_memory(args.memory_bytes)
    wire.write_frame(replies, {"kind": "ready", "address_space": address_space()})
    serve(reader, sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()
