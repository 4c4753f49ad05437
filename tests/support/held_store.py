"""A question's store held until released, as a database slowed by a burst holds it: for the tests that a platform
hears "received" only once the question is stored."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.app.services import Services


class HeldStore:
    """Holds every question's store (ConversationRepo.open_turn) until `release`; released on exit whatever happened,
    so a failing test does not leave a turn waiting for ever."""

    def __init__(self, services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
        self.storing = asyncio.Event()
        self.release = asyncio.Event()
        self.stored = asyncio.Event()
        store = services.conversations.open_turn

        async def held(*args: Any, **kwargs: Any) -> Any:
            self.storing.set()
            await self.release.wait()
            opened = await store(*args, **kwargs)
            self.stored.set()
            return opened

        monkeypatch.setattr(services.conversations, "open_turn", held)

    async def __aenter__(self) -> HeldStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release.set()
