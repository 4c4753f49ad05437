"""Threads: a message the bot just posted is found at once, before (or without) its record in the database."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from bot.chat.state import ChatState
from bot.chat.threads import Threads
from bot.types import ConversationKey
from tests.unit.bot.chat.stand_ins import ChatSettings, Conversations, KnowledgeNames, Posted

CHAIN = ConversationKey("telegram", "", "-100123", "reply:10")


class _SlowPosted(Posted):
    """A database whose write of posted messages waits until `written` is set; it knows nothing until then."""

    def __init__(self) -> None:
        self.writing = asyncio.Event()
        self.written = asyncio.Event()

    async def remember(
        self, conversation_id: str, platform: str, workspace: str, chat: str, message_ids: Sequence[str]
    ) -> None:
        self.writing.set()
        await self.written.wait()


async def test_a_reply_to_a_message_still_being_recorded_finds_its_conversation() -> None:
    conversations, posted = Conversations(), _SlowPosted()
    await conversations.resolve(*(CHAIN.platform, CHAIN.workspace, CHAIN.chat, CHAIN.thread))
    threads = Threads(posted, ChatState(ChatSettings(), KnowledgeNames(), conversations), conversations)
    recording = asyncio.create_task(threads.remember(CHAIN, ["11"]))
    await asyncio.wait_for(posted.writing.wait(), 10)
    assert await threads.of_message(CHAIN.chat_key, "11") == "reply:10"
    assert await threads.of_message(CHAIN.chat_key, "12") is None
    posted.written.set()
    await asyncio.wait_for(recording, 10)


async def test_nothing_is_remembered_for_a_thread_with_no_conversation() -> None:
    conversations, posted = Conversations(), _SlowPosted()
    threads = Threads(posted, ChatState(ChatSettings(), KnowledgeNames(), conversations), conversations)
    await threads.remember(CHAIN, ["11"])  # a command's reply in a chain nobody asked in
    assert not posted.writing.is_set()
    assert await threads.of_message(CHAIN.chat_key, "11") is None
