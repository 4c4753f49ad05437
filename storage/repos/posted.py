"""Which conversation a platform message belongs to: the bot's posted messages by id, questions by event key, and a
person's latest conversation in a chat."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import and_, literal, or_, union_all
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import col, select
from sqlmodel.sql.expression import SelectOfScalar

from storage.db import Database
from storage.models import Conversation, Message, PostedMessage


class PostedRepo:
    """The bot's posted messages, and the reads that find a conversation from a message or a person."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def remember(
        self, conversation_id: str, platform: str, workspace: str, chat: str, message_ids: Sequence[str]
    ) -> None:
        """Record that the bot posted `message_ids` in the conversation (one posted twice keeps its first)."""
        if not message_ids:
            return
        insert = sqlite.insert if self._db.config.is_sqlite else postgresql.insert
        rows = [
            {"platform": platform, "workspace": workspace, "chat": chat, "message_id": message_id[:128]}
            | {"conversation_id": conversation_id}
            for message_id in dict.fromkeys(message_ids)
        ]
        async with self._db.session() as session:
            await session.exec(insert(PostedMessage).values(rows).on_conflict_do_nothing())

    async def thread_of(self, platform: str, workspace: str, chat: str, message_id: str, event_key: str) -> str | None:
        """The thread of the conversation holding the message: one the bot posted (by its id), or a question (by the
        key of the event that brought it); None when neither is known (deleted, sent before either was recorded).

        One indexed read: the posted message's primary key, or the question's unique event key."""
        posted = (
            select(Conversation.thread, literal(0).label("rank"))
            .join(PostedMessage, col(PostedMessage.conversation_id) == col(Conversation.id))
            .where(
                col(PostedMessage.platform) == platform,
                col(PostedMessage.workspace) == workspace,
                col(PostedMessage.chat) == chat,
                col(PostedMessage.message_id) == message_id,
            )
        )
        asked = (
            select(Conversation.thread, literal(1).label("rank"))
            .join(Message, col(Message.conversation_id) == col(Conversation.id))
            .where(col(Message.event_key) == event_key[:300])
        )
        both = union_all(posted, asked).subquery()
        statement = select(both.c.thread).order_by(both.c.rank).limit(1)
        async with self._db.session() as session:
            found = (await session.exec(statement)).first()
        return str(found) if found is not None else None

    async def thread_of_answer(self, platform: str, workspace: str, chat: str, answer_id: str) -> str | None:
        """The thread of the conversation holding the stored answer `answer_id`, when that conversation is in this
        chat (a pressed button names its answer; another chat's is not this one's to rate); else None."""
        statement = _message_threads(platform, workspace, chat).where(
            col(Message.id) == answer_id, col(Message.role) == "assistant"
        )
        async with self._db.session() as session:
            return (await session.exec(statement)).first()

    async def latest_thread(self, platform: str, workspace: str, chat: str, author: str) -> str | None:
        """The thread of the conversation in which `author` last asked something in this chat (threads only: the
        chat-wide conversation, thread "", is not one); None when they asked nothing there."""
        statement = (
            _message_threads(platform, workspace, chat)
            .where(col(Message.author) == author, col(Message.role) == "user", col(Conversation.thread) != "")
            .order_by(col(Message.created_at).desc())
            .limit(1)
        )
        async with self._db.session() as session:
            return (await session.exec(statement)).first()

    async def earlier_round(
        self, platform: str, workspace: str, chat: str, message_id: str, event_key: str
    ) -> tuple[str, str] | None:
        """The question and answer of a round of the chat's one conversation (thread "", a group's before reply
        chains) that a message belongs to: an answer by its platform id, a question by its event key; None when the
        message is neither, or its round was not answered."""
        conversation = (
            select(Conversation.id)
            .where(
                col(Conversation.platform) == platform,
                col(Conversation.workspace) == workspace,
                col(Conversation.chat) == chat,
                col(Conversation.thread) == "",
            )
            .scalar_subquery()
        )
        hit = (
            select(Message.request_id)
            .where(
                col(Message.conversation_id) == conversation,
                or_(
                    col(Message.event_key) == event_key[:300],
                    and_(col(Message.role) == "assistant", col(Message.platform_message_id) == message_id),
                ),
            )
            .limit(1)
            .scalar_subquery()
        )
        statement = select(Message.role, Message.text, Message.status).where(
            col(Message.conversation_id) == conversation, col(Message.request_id) == hit
        )
        async with self._db.session() as session:
            rows = list(await session.exec(statement))
        question = next((text for role, text, _ in rows if role == "user"), "")
        answer = next((text for role, text, status in rows if role == "assistant" and status == "done"), "")
        return (question, answer) if question and answer else None


def _message_threads(platform: str, workspace: str, chat: str) -> SelectOfScalar[str]:
    """The read of the thread of each message's conversation, for the conversations of one chat."""
    return (
        select(Conversation.thread)
        .join(Message, col(Message.conversation_id) == col(Conversation.id))
        .where(
            col(Conversation.platform) == platform,
            col(Conversation.workspace) == workspace,
            col(Conversation.chat) == chat,
        )
    )
