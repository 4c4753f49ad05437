"""Frames between ragbot and its extraction child: a JSON header and a byte payload, each length-prefixed.

JSON, not pickle: the child reads hostile files, so nothing it sends back may run code in the parent.
"""

from __future__ import annotations

import json
import struct
from typing import Any, BinaryIO

# Two big-endian 32-bit lengths: the header's, then the payload's.
_PREFIX = struct.Struct(">II")
PREFIX_SIZE = _PREFIX.size
# A header is a few fields; a payload is a file (up to INGEST_MAX_FILE_MB) or a piece of text (1M characters).
MAX_HEADER = 1 << 20
MAX_PAYLOAD = (1 << 32) - 1

Frame = tuple[dict[str, Any], bytes]


def encode(header: dict[str, Any], payload: bytes = b"") -> bytes:
    """One frame as bytes."""
    head = json.dumps(header, ensure_ascii=False).encode()
    return _PREFIX.pack(len(head), len(payload)) + head + payload


def lengths(prefix: bytes) -> tuple[int, int]:
    """The header and payload lengths a frame's prefix announces; ValueError past the bounds."""
    head, payload = _PREFIX.unpack(prefix)
    if head > MAX_HEADER:
        raise ValueError(f"frame header of {head} bytes")
    return head, payload


def decode_header(head: bytes) -> dict[str, Any]:
    """A frame's header; ValueError when it is not a JSON object."""
    header = json.loads(head)
    if not isinstance(header, dict):
        raise ValueError("frame header is not an object")
    return header


def write_frame(stream: BinaryIO, header: dict[str, Any], payload: bytes = b"") -> None:
    """Write one frame and flush it (blocking: the child's side)."""
    stream.write(encode(header, payload))
    stream.flush()


def read_frame(stream: BinaryIO) -> Frame | None:
    """Read one frame (blocking: the child's side); None when the stream ends between frames."""
    prefix = stream.read(PREFIX_SIZE)
    if not prefix:
        return None
    if len(prefix) < PREFIX_SIZE:
        raise EOFError("stream ended inside a frame")
    head, size = lengths(prefix)
    header = decode_header(_exactly(stream, head))
    return header, _exactly(stream, size)


def _exactly(stream: BinaryIO, size: int) -> bytes:
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("stream ended inside a frame")
    return data
