"""Storage errors: what went wrong in the relational store or the vector index."""

from __future__ import annotations


class StorageError(Exception):
    """Base of every storage failure."""


def first_line(exc: BaseException) -> str:
    """An error's first line, or its type's name when it has no text: how a failure is named in one line."""
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class DatabaseUnavailable(StorageError):
    """The relational store cannot be reached or migrated."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"database {url} unavailable: {reason}")
        self.url = url
        self.reason = reason


class IndexUnavailable(StorageError):
    """The Weaviate index cannot be reached or started."""


class WeaviateBinaryMissing(IndexUnavailable):
    """The local weaviate-server binary is not installed where it is expected."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"weaviate-server not found at {path}: run `make weaviate` to build it, "
            "or set WEAVIATE_URL to an existing Weaviate"
        )
        self.path = path


class ServerInUse(IndexUnavailable):
    """The local data dir is served by another live ragbot's Weaviate; `endpoint` says where it answers, `owner_pid`
    which ragbot runs it."""

    def __init__(self, message: str, endpoint: dict[str, int | str] | None, owner_pid: int | None = None) -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.owner_pid = owner_pid


class IndexWriteError(StorageError):
    """Some objects of a batch were not stored; every per-object error is kept."""

    def __init__(self, errors: dict[str, str]) -> None:
        first = next(iter(errors.items()), ("", ""))
        super().__init__(f"{len(errors)} object(s) not indexed; first: {first[0]}: {first[1]}")
        self.errors = errors


class DuplicateName(StorageError):
    """A row with this unique name already exists."""

    def __init__(self, kind: str, name: str) -> None:
        super().__init__(f"a {kind} named {name!r} already exists")
        self.kind = kind
        self.name = name


class NotFound(StorageError):
    """No row has this id or name."""

    def __init__(self, kind: str, key: str) -> None:
        super().__init__(f"no {kind} {key!r}")
        self.kind = kind
        self.key = key


class ReasonRefused(StorageError):
    """A reason for a 👎 that cannot be stored: the answer has no 👎 (`not_down`) or someone else pressed it
    (`not_rater`)."""

    def __init__(self, why: str, message_id: str) -> None:
        super().__init__(f"reason refused for {message_id!r}: {why}")
        self.why = why
        self.message_id = message_id


class DuplicateEvent(StorageError):
    """A platform event was stored before: a retried delivery, to be answered once."""

    def __init__(self, event_key: str) -> None:
        super().__init__(f"event {event_key!r} was already stored")
        self.event_key = event_key


class DocumentNotStored(StorageError):
    """The database refused one document's new version; the document is as it was before."""

    def __init__(self, source_uri: str, reason: str) -> None:
        super().__init__(f"the document could not be stored: {reason}")
        self.source_uri = source_uri
        self.reason = reason


class ReplicationFactorTooHigh(IndexUnavailable):
    """Collections would be replicated to more nodes than the Weaviate cluster has."""

    def __init__(self, factor: int, nodes: int) -> None:
        super().__init__(
            f"WEAVIATE_REPLICATION_FACTOR={factor} needs {factor} Weaviate nodes, but the cluster has {nodes}: "
            f"set WEAVIATE_REPLICATION_FACTOR to {nodes} or less, or add nodes"
        )
        self.factor = factor
        self.nodes = nodes


class BackupError(StorageError):
    """A backup that could not be made, or one that must not be restored; the text says which and what to do."""


class TablesUnavailable(StorageError):
    """The tables file could not be opened or written (another process holds it, the disk is full)."""


class RefusedQuery(StorageError):
    """SQL the tables will not run (storage.tables.guard), or that DuckDB stopped; `reason` is a key=value for logs."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"query refused: {reason}")
        self.reason = reason
