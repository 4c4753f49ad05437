"""The newest answers' meta, read back on SQLite and PostgreSQL: what counting the most asked FAQs reads."""

from __future__ import annotations

from storage.db import Database
from storage.repos.answer_meta import AnswerMetaRepo
from storage.repos.conversations import ConversationRepo


async def test_the_newest_finished_answers_meta_is_read_newest_first_and_bounded(db: Database) -> None:
    conversations = ConversationRepo(db)
    conversation = await conversations.resolve("slack", "T1", "D1", "")
    for n in range(4):
        await conversations.add_message(conversation.id, f"r{n}", "user", f"question {n}", meta={"n": n})
        meta = {"outcome": "faq_direct", "sources": [{"id": f"faq-{n}", "kind": "faq"}]}
        await conversations.add_message(conversation.id, f"r{n}", "assistant", f"answer {n}", meta=meta)
    await conversations.add_message(conversation.id, "r9", "assistant", "", status="streaming", meta={"n": 9})
    newest = await AnswerMetaRepo(db).newest(3)
    assert [meta["sources"][0]["id"] for meta in newest] == ["faq-3", "faq-2", "faq-1"]
    assert await AnswerMetaRepo(db).newest(0) == []
