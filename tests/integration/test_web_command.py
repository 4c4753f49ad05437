"""`/web on|off`: a chat's admin lets its answers search the web (where a provider is configured), nobody else."""

from __future__ import annotations

import pytest

from bot.chat.manager import ChatPolicy, ConversationManager
from bot.commands.registry import parse_command
from bot.types import ConversationKey, IncomingMessage, UserRef
from bot.words import messages
from tests.support.chat import RecordingTarget
from tests.support.chat_world import ChatWorld

ADMIN, ALICE = UserRef("u-admin"), UserRef("u-alice")
GROUP = ConversationKey("test", "team", "group-1")


def _manager(world: ChatWorld) -> ConversationManager:
    policy = ChatPolicy(admins={"test": frozenset({ADMIN.id})}, default_kbs=("handbook",), group_answer_mode="all")
    return ConversationManager(world.chat_parts(), policy, world.command_parts())


def _message(text: str, user: UserRef) -> IncomingMessage:
    return IncomingMessage(key=GROUP, message_id="", user=user, text=text, command=parse_command(text))


async def _web_search(world: ChatWorld) -> bool:
    return (await world.bindings.setting(GROUP.platform, GROUP.workspace, GROUP.chat)).web_search


@pytest.mark.parametrize("switch", ["on", "off"])
async def test_web_by_someone_not_an_admin_is_refused_and_changes_nothing(world: ChatWorld, switch: str) -> None:
    world.web_search = True
    target = RecordingTarget()
    await _manager(world).handle(_message(f"/web {switch}", ALICE), target)
    assert target.replies() == [messages.admins_only("web", "en")]
    assert await _web_search(world) is False


async def test_an_admins_web_on_lets_the_chats_answers_search_the_web_and_off_stops_them(world: ChatWorld) -> None:
    world.web_search = True
    manager, target = _manager(world), RecordingTarget()
    await manager.handle(_message("Which VPN client?", ALICE), target)
    await manager.handle(_message("/web on", ADMIN), target)
    await manager.handle(_message("Which VPN client?", ALICE), target)
    await manager.handle(_message("/web off", ADMIN), target)
    await manager.handle(_message("Which VPN client?", ALICE), target)
    assert world.answerer.web_searches == [False, True, False]
    assert messages.web_search_set(True, "en") in target.replies()
    assert messages.web_search_set(False, "en") in target.replies()
    assert await _web_search(world) is False


async def test_web_on_where_no_provider_is_configured_says_so_and_stays_off(world: ChatWorld) -> None:
    target = RecordingTarget()
    await _manager(world).handle(_message("/web on", ADMIN), target)
    assert target.replies() == [messages.web_search_unavailable("en")]
    assert await _web_search(world) is False


async def test_new_tells_the_answerer_to_drop_the_conversations_web_passages(world: ChatWorld) -> None:
    manager, target = _manager(world), RecordingTarget()
    await manager.handle(_message("Which VPN client?", ALICE), target)
    await manager.handle(_message("/new", ALICE), target)
    conversation = await manager.existing(GROUP)
    assert conversation is not None
    assert world.answerer.forgotten == [conversation.id]
