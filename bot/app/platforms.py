"""Finding the chat platforms: adapters register a factory in the `ragbot.adapters` entry-point group."""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Final

from bot.app.settings import Settings
from bot.chat.manager import ConversationManager
from bot.ports import Adapter
from storage.db import Database

log = logging.getLogger(__name__)

GROUP: Final = "ragbot.adapters"

AdapterFactory = Callable[[ConversationManager, Settings, Database], Adapter | None]
"""Builds an adapter over the manager, or returns None when its platform is not configured. The database is for
what a platform stores of its own (Slack's installations); the conversation goes through the manager only."""


def load_adapters(manager: ConversationManager, settings: Settings, database: Database) -> list[Adapter]:
    """Every configured adapter, in entry-point name order (bot never imports adapters itself)."""
    adapters = []
    for entry in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        factory: AdapterFactory = entry.load()
        adapter = factory(manager, settings, database)
        if adapter is None:
            log.info("adapter=off name=%s (not configured)", entry.name)
            continue
        log.info("adapter=on name=%s", entry.name)
        adapters.append(adapter)
    return adapters
