"""The turn boundary over plain stand-ins of its parts: what a chat reads, and what the person is shown."""

from __future__ import annotations

import pytest

from bot.types import ConversationKey, UserRef
from bot.words import messages
from tests.support.chat import RecordingTarget
from tests.unit.bot.chat.stand_ins import ADMIN, ALICE, DM, KnowledgeNames, Parts, manager, message

WEB = ConversationKey("web", "", "s1")


async def test_a_default_knowledge_base_created_later_is_read_once_the_manager_is_told() -> None:
    parts = Parts()
    chat = manager(parts, clock=lambda: 0.0, default_kbs=("handbook",))
    await chat.handle(message("Which VPN client?"), RecordingTarget())
    kb = parts.knowledge.add("handbook")
    assert await chat.readable_kb_ids(DM) == []  # names are resolved once a while, not on every turn
    chat.knowledge_changed()
    await chat.handle(message("Which VPN client?"), RecordingTarget())
    assert [kb_ids for _, kb_ids in parts.answerer.asked] == [(), (kb.id,)]


@pytest.mark.parametrize(
    ("bound", "allowed", "key", "missing"),
    [
        ((), {}, DM, ["handbook"]),
        (("kb-docs",), {}, DM, []),  # a chat bound to a knowledge base does not read the defaults
        ((), {"web": ("docs",)}, WEB, []),  # nor what its platform may not read
        ((), {"web": ("handbook", "docs")}, WEB, ["handbook"]),
    ],
)
async def test_a_chats_missing_defaults_are_those_it_would_read(
    bound: tuple[str, ...], allowed: dict[str, tuple[str, ...]], key: ConversationKey, missing: list[str]
) -> None:
    parts = Parts(knowledge=KnowledgeNames("docs"))
    parts.settings.bound[(key.platform, key.workspace, key.chat)] = list(bound)
    chat = manager(parts, default_kbs=("handbook", "docs"), allowed_kbs=allowed)
    assert await chat.missing_kb_names(key) == missing


@pytest.mark.parametrize(("user", "admin"), [(ALICE, False), (ADMIN, True)])
async def test_an_answer_in_a_chat_whose_default_is_missing_names_it_and_the_way_out(
    user: UserRef, admin: bool
) -> None:
    parts = Parts()
    chat, target = manager(parts, default_kbs=("handbook",)), RecordingTarget()
    await chat.handle(message("Which VPN client?", user=user), target)
    (stream,) = target.streams
    assert stream.finished is not None
    assert stream.finished.notice == messages.no_kb_bound(["handbook"], "en", admin=admin)
    assert ("/kb create handbook" if admin else "ask an admin") in stream.finished.notice.lower()


async def test_an_answer_in_a_chat_that_reads_its_knowledge_base_has_no_such_notice() -> None:
    parts = Parts(knowledge=KnowledgeNames("handbook"))
    chat, target = manager(parts, default_kbs=("handbook",)), RecordingTarget()
    await chat.handle(message("Which VPN client?"), target)
    (stream,) = target.streams
    assert stream.finished is not None
    assert stream.finished.notice == ""
