"""How to reach the Neo4j that holds the entity graphs (apart from the store, so settings need not load the driver)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Neo4jConfig:
    """A Neo4j server: its Bolt URI, credentials (none when its auth is off) and database."""

    uri: str
    user: str | None = None
    password: str | None = None
    database: str = "neo4j"
    # A turn waits this long for the graph at most; the answer goes on without the leg past it.
    query_timeout: float = 10.0
    connection_timeout: float = 5.0
