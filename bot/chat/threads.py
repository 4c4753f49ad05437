"""Which conversation of a chat a message belongs to, for chats whose conversations are threads ragbot keeps itself:
a Telegram group keyed by reply chain, a Slack slash command that names no thread."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final

from bot.chat.parts import Conversations, Posted
from bot.chat.state import ChatState
from bot.types import ConversationKey

log = logging.getLogger(__name__)

# The commands that act on one conversation (the rest act on the whole chat): where a person names none, the
# conversation they last asked in is the one they mean.
CONVERSATION_COMMANDS: Final = frozenset({"new", "stop", "sources"})
# Posted messages remembered in memory at most (the database holds them all).
_RECENT: Final = 10_000


def event_key(key: ConversationKey, message_id: str) -> str:
    """The key of the platform event that brought a message: unique per chat, so a redelivery is seen."""
    return f"{key.platform}:{key.workspace}:{key.chat}:{message_id}"


class Threads:
    """Finds a conversation from a message in it or from the person who asked, and records the bot's messages."""

    def __init__(self, posted: Posted, state: ChatState, conversations: Conversations) -> None:
        self._posted = posted
        self._state = state
        self._conversations = conversations
        # The messages this process posted lately, by (platform, workspace, chat, id): known the moment they are
        # sent, so a reply (a /stop) that comes before the database write is read still finds its conversation.
        self._recent: OrderedDict[tuple[str, str, str, str], str] = OrderedDict()

    async def of_message(self, chat: ConversationKey, message_id: str) -> str | None:
        """The thread of the conversation `message_id` belongs to in `chat` (a message the bot posted, or a
        question it answered); None when unknown (deleted, from before the upgrade, a command's reply)."""
        recent = self._recent.get((chat.platform, chat.workspace, chat.chat, message_id))
        if recent is not None:
            return recent
        return await self._posted.thread_of(
            chat.platform, chat.workspace, chat.chat, message_id, event_key(chat, message_id)
        )

    async def of_answer(self, chat: ConversationKey, answer_id: str) -> str | None:
        """The thread of the conversation in `chat` holding the stored answer `answer_id` (a pressed button's), or
        None when no conversation of this chat holds it."""
        return await self._posted.thread_of_answer(chat.platform, chat.workspace, chat.chat, answer_id)

    async def latest(self, chat: ConversationKey, user_id: str) -> str | None:
        """The thread of the conversation in which `user_id` last asked something in `chat`, or None."""
        return await self._posted.latest_thread(chat.platform, chat.workspace, chat.chat, user_id)

    async def carry_over(self, key: ConversationKey, message_id: str) -> bool:
        """Start the conversation at `key` with the round of the chat's one conversation from before reply chains
        that `message_id` belongs to (its question or its answer), as its history: a reply to an answer from before
        the upgrade is read against it. False when the message is no such round's."""
        chat = key.chat_key
        earlier = await self._posted.earlier_round(
            chat.platform, chat.workspace, chat.chat, message_id, event_key(chat, message_id)
        )
        if earlier is None:
            return False
        conversation = await self._state.conversation(key)
        question, answer = earlier
        round_id = f"seed-earlier-{message_id}"
        await self._conversations.add_message(conversation.id, round_id, "user", question)
        await self._conversations.add_message(conversation.id, round_id, "assistant", answer)
        return True

    async def remember(self, key: ConversationKey, message_ids: Sequence[str]) -> None:
        """Record that the bot posted `message_ids` in the conversation at `key`, so a reply to one continues it.

        Nothing is recorded where no conversation exists (a command's reply in a new thread: a reply to it starts
        one), and a failed write costs only that: the answer being written matters more than its link."""
        try:
            conversation = await self._state.existing(key)
            if conversation is not None:
                for message_id in message_ids:
                    self._recent[(key.platform, key.workspace, key.chat, message_id)] = key.thread
                while len(self._recent) > _RECENT:
                    self._recent.popitem(last=False)
                await self._posted.remember(conversation.id, key.platform, key.workspace, key.chat, message_ids)
        except Exception as exc:  # the database away for a moment: a reply to this message starts a new one
            log.warning("thread=posted_unrecorded platform=%s chat=%s reason=%s", key.platform, key.chat, exc)
