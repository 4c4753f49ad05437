"""PostedRepo contract, on SQLite and PostgreSQL: a message finds its conversation in one read, by the bot's posted
id or the question's event key; a person's latest conversation in a chat; retention takes the records along."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from storage.db import Database
from storage.repos.conversations import ConversationRepo
from storage.repos.posted import PostedRepo
from storage.repos.retention import RetentionRepo
from tests.integration.sql_count import count_statements

GROUP = "-100123"


def _key(chat: str, message_id: str) -> str:
    return f"telegram::{chat}:{message_id}"


async def test_a_posted_message_and_a_question_each_find_their_conversation_in_one_read(db: Database) -> None:
    conversations, posted = ConversationRepo(db), PostedRepo(db)
    chain = await conversations.resolve("telegram", "", GROUP, "reply:10")
    await conversations.open_turn(chain.id, "r1", "How do I install the VPN?", author="7", event_key=_key(GROUP, "10"))
    await posted.remember(chain.id, "telegram", "", GROUP, ["11", "12"])
    with count_statements(db) as sent:
        answer = await posted.thread_of("telegram", "", GROUP, "11", _key(GROUP, "11"))
    assert answer == "reply:10"
    assert len(sent) == 1
    assert await posted.thread_of("telegram", "", GROUP, "12", _key(GROUP, "12")) == "reply:10"
    assert await posted.thread_of("telegram", "", GROUP, "10", _key(GROUP, "10")) == "reply:10"


async def test_an_unknown_message_or_one_of_another_chat_finds_nothing(db: Database) -> None:
    conversations, posted = ConversationRepo(db), PostedRepo(db)
    chain = await conversations.resolve("telegram", "", GROUP, "reply:10")
    await posted.remember(chain.id, "telegram", "", GROUP, ["11"])
    assert await posted.thread_of("telegram", "", GROUP, "99", _key(GROUP, "99")) is None
    # Telegram numbers messages per chat: the same number in another group is another message.
    assert await posted.thread_of("telegram", "", "-100999", "11", _key("-100999", "11")) is None
    assert await posted.thread_of("slack", "", GROUP, "11", "slack::-100123:11") is None


async def test_a_message_remembered_twice_keeps_its_first_conversation(db: Database) -> None:
    conversations, posted = ConversationRepo(db), PostedRepo(db)
    first = await conversations.resolve("telegram", "", GROUP, "reply:1")
    second = await conversations.resolve("telegram", "", GROUP, "reply:2")
    await posted.remember(first.id, "telegram", "", GROUP, ["5", "5"])
    await posted.remember(second.id, "telegram", "", GROUP, ["5"])
    await posted.remember(second.id, "telegram", "", GROUP, [])
    assert await posted.thread_of("telegram", "", GROUP, "5", _key(GROUP, "5")) == "reply:1"


async def test_the_latest_thread_is_the_persons_newest_question_in_that_chat_only(db: Database) -> None:
    start = datetime(2026, 11, 1, tzinfo=UTC)
    posted = PostedRepo(db)

    async def ask(thread: str, author: str, minutes: int, chat: str = "C1") -> None:
        repo = ConversationRepo(db, clock=lambda: start + timedelta(minutes=minutes))
        conversation = await repo.resolve("slack", "T1", chat, thread)
        await repo.add_message(conversation.id, f"r{minutes}", "user", "a question", author=author)
        await repo.add_message(conversation.id, f"r{minutes}", "assistant", "an answer")

    await ask("100.1", "U1", 1)
    await ask("200.1", "U1", 2)
    await ask("300.1", "U2", 3)  # another person's, later
    await ask("400.1", "U1", 4, chat="C2")  # another channel's, later
    await ask("", "U1", 5)  # the channel-wide conversation is no thread
    assert await posted.latest_thread("slack", "T1", "C1", "U1") == "200.1"
    assert await posted.latest_thread("slack", "T1", "C1", "U2") == "300.1"
    assert await posted.latest_thread("slack", "T1", "C1", "U3") is None


async def test_retention_removes_a_conversations_posted_messages_with_it(db: Database) -> None:
    old = datetime(2026, 1, 1, tzinfo=UTC)
    conversations = ConversationRepo(db, clock=lambda: old)
    posted = PostedRepo(db)
    chain = await conversations.resolve("telegram", "", GROUP, "reply:10")
    await conversations.add_message(chain.id, "r1", "user", "How do I install the VPN?")
    await posted.remember(chain.id, "telegram", "", GROUP, ["11"])
    removed = await RetentionRepo(db).remove_conversations(old + timedelta(days=1))
    assert removed == (1, 1)
    assert await posted.thread_of("telegram", "", GROUP, "11", _key(GROUP, "11")) is None


async def test_an_earlier_round_of_the_chats_one_conversation_is_found_by_its_answer_or_its_question(
    db: Database,
) -> None:
    conversations, posted = ConversationRepo(db), PostedRepo(db)
    legacy = await conversations.resolve("telegram", "", GROUP, "")
    await conversations.add_message(legacy.id, "r1", "user", "How do I install the VPN?", event_key=_key(GROUP, "40"))
    await conversations.add_message(legacy.id, "r1", "assistant", "From the Software Center.", platform_message_id="41")
    await conversations.add_message(legacy.id, "r2", "user", "Unanswered?", event_key=_key(GROUP, "42"))
    await conversations.add_message(legacy.id, "r2", "assistant", "", status="failed", platform_message_id="43")
    expected = ("How do I install the VPN?", "From the Software Center.")
    assert await posted.earlier_round("telegram", "", GROUP, "41", _key(GROUP, "41")) == expected
    assert await posted.earlier_round("telegram", "", GROUP, "40", _key(GROUP, "40")) == expected
    assert await posted.earlier_round("telegram", "", GROUP, "43", _key(GROUP, "43")) is None
    assert await posted.earlier_round("telegram", "", GROUP, "99", _key(GROUP, "99")) is None
    # A reply chain's messages are no earlier round: they are found as the chain's own.
    chain = await conversations.resolve("telegram", "", GROUP, "reply:50")
    await conversations.add_message(chain.id, "r3", "user", "Where?", event_key=_key(GROUP, "50"))
    await conversations.add_message(chain.id, "r3", "assistant", "Here.", platform_message_id="51")
    assert await posted.earlier_round("telegram", "", GROUP, "51", _key(GROUP, "51")) is None


async def test_a_stored_answer_names_its_thread_only_within_its_own_chat(db: Database) -> None:
    conversations, posted = ConversationRepo(db), PostedRepo(db)
    chain = await conversations.resolve("telegram", "", GROUP, "reply:10")
    question, answer = await conversations.open_turn(chain.id, "r1", "How do I install the VPN?", author="7")
    assert await posted.thread_of_answer("telegram", "", GROUP, answer.id) == "reply:10"
    assert await posted.thread_of_answer("telegram", "", "-100999", answer.id) is None  # pressed in another chat
    assert await posted.thread_of_answer("telegram", "", GROUP, question.id) is None  # a question is rated never
