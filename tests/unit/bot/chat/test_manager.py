"""The turn boundary over plain stand-ins of its parts: what a chat reads, and what the person is shown."""

from __future__ import annotations

from tests.support.chat import RecordingTarget
from tests.unit.bot.chat.stand_ins import DM, Parts, manager, message


async def test_a_default_knowledge_base_created_later_is_read_once_the_manager_is_told() -> None:
    parts = Parts()
    chat = manager(parts, clock=lambda: 0.0, default_kbs=("handbook",))
    await chat.handle(message("Which VPN client?"), RecordingTarget())
    kb = parts.knowledge.add("handbook")
    assert await chat.readable_kb_ids(DM) == []  # names are resolved once a while, not on every turn
    chat.knowledge_changed()
    await chat.handle(message("Which VPN client?"), RecordingTarget())
    assert [kb_ids for _, kb_ids in parts.answerer.asked] == [(), (kb.id,)]
