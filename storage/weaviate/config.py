"""Frozen configuration for the Weaviate index and the local server supervisor."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

WEAVIATE_VERSION = "1.38.11"


Consistency = Literal["ONE", "QUORUM", "ALL"]


@dataclass(frozen=True, slots=True)
class WeaviateConfig:
    """How to reach Weaviate; `url=None` means the local server ragbot supervises."""

    url: str | None = None
    grpc_url: str | None = None
    api_key: str | None = None
    init_timeout: float = 10.0
    query_timeout: float = 30.0
    insert_timeout: float = 120.0
    # Searches sent at once; more wait here, where waiting costs nothing, instead of piling onto the server until
    # each one's query_timeout runs out (1,000 questions at once on 2 cores did that to a third of them).
    max_concurrent_queries: int = 16
    # How many nodes hold each object of the collections ragbot creates (1: no replication).
    replication_factor: int = 1
    # How many of those replicas answer each read and acknowledge each write before it counts as done.
    consistency: Consistency = "QUORUM"


@dataclass(frozen=True, slots=True)
class WeaviateServerConfig:
    """The local weaviate-server binary and where it keeps its data."""

    binary: Path
    data_dir: Path
    startup_timeout: float = 60.0
    host: str = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class WeaviateEndpoint:
    """Where a running Weaviate answers: REST and gRPC."""

    http_host: str
    http_port: int
    http_secure: bool
    grpc_host: str
    grpc_port: int
    grpc_secure: bool
    # A local server's process, and the other ragbot that runs it when this one only shares it.
    server_pid: int | None = None
    owner_pid: int | None = None

    @property
    def http_url(self) -> str:
        """The REST base URL."""
        scheme = "https" if self.http_secure else "http"
        return f"{scheme}://{self.http_host}:{self.http_port}"
