"""A Telegram group without topics as many conversations, one per reply chain: a message that replies to nothing
of one starts a conversation of its own; a reply to an answer, or to the question it answered, continues that one."""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from telegram import Message

from adapters.telegram.translate import conversation_key
from bot.chat.threads import CONVERSATION_COMMANDS, Threads
from bot.types import ConversationKey, IncomingMessage

# A reply chain's thread is named by the message that started it: "reply:<its message_id>".
REPLY_THREAD: Final = "reply:"


def keyed_by_reply(message: Message) -> bool:
    """Whether the message's chat keeps one conversation per reply chain: a group without topics (a forum keys
    by topic; a private chat is one conversation)."""
    return message.chat.type in (message.chat.GROUP, message.chat.SUPERGROUP) and not message.chat.is_forum


def started_by(message_id: int) -> str:
    """The thread of the conversation a message starts."""
    return f"{REPLY_THREAD}{message_id}"


def question_of(thread: str) -> int | None:
    """The message that started a reply chain's conversation (what its answers reply to), or None."""
    _, prefix, number = thread.partition(REPLY_THREAD)
    return int(number) if prefix and number.isdigit() else None


async def in_reply_chain(message: Message, incoming: IncomingMessage, threads: Threads) -> IncomingMessage:
    """`incoming` keyed by its reply chain: the conversation of the message it replies to where that is known; for a
    conversation command replying to nothing, the person's latest conversation here; else a conversation of its own.

    A replied message ragbot does not know (deleted, a command's reply, another person's chatter) starts a new
    conversation rather than failing; one of the group's single conversation from before this version starts one
    whose history is that message's question and answer."""
    chat = incoming.key.chat_key
    started = replace(incoming, key=replace(chat, thread=started_by(message.message_id)))
    replied = message.reply_to_message
    if replied is not None:
        thread = await threads.of_message(chat, str(replied.message_id))
        if thread:
            return replace(incoming, key=replace(chat, thread=thread))
        if incoming.command is None:
            # An answer (or question) of the group's one conversation from before reply chains: its round is the
            # new conversation's history, so "it" still reads against what was replied to.
            await threads.carry_over(started.key, str(replied.message_id))
    elif incoming.command is not None and incoming.command.name in CONVERSATION_COMMANDS:
        thread = await threads.latest(chat, incoming.user.id)
        if thread:
            return replace(incoming, key=replace(chat, thread=thread), latest_conversation=True)
    return started


async def answer_key(message: Message, answer_id: str, threads: Threads) -> ConversationKey:
    """The conversation of the answer a pressed button is under (`message`, the bot's): in a group keyed by reply
    chain, the one of this group holding the stored answer the button names (an answer of another chat is in none)."""
    key = conversation_key(message)
    if not keyed_by_reply(message):
        return key
    thread = await threads.of_answer(key, answer_id)
    return replace(key, thread=thread or "")
