"""Health of each part: ok, missing (not configured) or error, with a short detail; readiness is the dependencies'."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from bot.app.services import Services
from storage.errors import StorageError

Status = Literal["ok", "missing", "error"]
_CHECK_TIMEOUT = 5.0
DEPENDENCIES = ("db", "weaviate")
"""The parts without which no question is answered and no job runs: a process is ready only while both answer."""


@dataclass(frozen=True, slots=True)
class PartHealth:
    """One part's state."""

    status: Status
    detail: str


async def _database(services: Services) -> PartHealth:
    try:
        await asyncio.wait_for(services.db.ping(), _CHECK_TIMEOUT)
    except (StorageError, TimeoutError) as exc:
        return PartHealth("error", str(exc) or "timed out")
    kind = "sqlite" if services.db.config.is_sqlite else "postgresql"
    return PartHealth("ok", kind)


async def _weaviate(services: Services) -> PartHealth:
    try:
        await asyncio.wait_for(services.store.ping(), _CHECK_TIMEOUT)
    except (StorageError, TimeoutError) as exc:
        return PartHealth("error", str(exc) or "timed out")
    return PartHealth("ok", "local server" if services.weaviate_server else "remote")


async def _embedder(services: Services) -> PartHealth:
    embedder = services.embedder
    return PartHealth("ok", f"{embedder.provider}:{embedder.model_id}")


async def _model(services: Services) -> PartHealth:
    if services.chat_model is None:
        return PartHealth("missing", "not configured: answers are extractive")
    return PartHealth("ok", f"configured: {services.chat_model.model_id}")


async def check_parts(services: Services) -> dict[str, PartHealth]:
    """Every part's health, checked concurrently."""
    names = ("db", "weaviate", "embedder", "model")
    results = await asyncio.gather(_database(services), _weaviate(services), _embedder(services), _model(services))
    return dict(zip(names, results, strict=True))


async def check_dependencies(services: Services) -> dict[str, PartHealth]:
    """The health of the DEPENDENCIES, checked concurrently."""
    results = await asyncio.gather(_database(services), _weaviate(services))
    return dict(zip(DEPENDENCIES, results, strict=True))


def is_healthy(parts: dict[str, PartHealth]) -> bool:
    """Healthy when nothing is in error (a missing optional model is fine)."""
    return all(part.status != "error" for part in parts.values())
