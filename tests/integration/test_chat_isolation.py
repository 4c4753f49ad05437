"""Chats over real services (Weaviate, the embedder, SQLite and PostgreSQL): a chat reads only the knowledge
bases bound to it, and an admin's upload is ingested with one status message edited as the job moves."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from bot.app.manager import build_manager
from bot.app.services import Services, build_services
from bot.chat.manager import ChatPolicy, ConversationManager
from bot.types import Attachment, Command, ConversationKey, IncomingMessage, UserRef
from bot.words import messages
from rag.ingest.documents import SourceFile
from rag.ingest.faq_sheet import FaqEntry
from tests.conftest import EmbeddedSettings, fresh_postgres_database
from tests.support.chat import RecordingTarget

ADMIN = UserRef("admin-1")
PERSON = UserRef("person-1")
CHAT_A = ConversationKey("test", "ws", "chat-a")
CHAT_B = ConversationKey("test", "ws", "chat-b")
SECRET_B = "The Falcon project budget is 4.2 million euros and its codename is Kestrel."


@dataclass
class Chats:
    services: Services
    manager: ConversationManager
    kb_a: str
    kb_b: str


@pytest_asyncio.fixture
async def chats(
    request: pytest.FixtureRequest,
    database_url: str,
    tmp_path: Path,
    embedded_settings: EmbeddedSettings,
) -> AsyncIterator[Chats]:
    if database_url == "postgresql-fresh":
        database_url = await fresh_postgres_database(request.getfixturevalue("postgres_url"))
    settings = embedded_settings(tmp_path / "data", DATABASE_URL=database_url)
    async with build_services(settings) as services:
        kb_a = await services.knowledge.create("alpha", {})
        kb_b = await services.knowledge.create("bravo", {})
        await services.ingestor.ingest(
            kb_a,
            SourceFile(b"# VPN\n\nThe VPN client is installed from the Software Center.", "upload:vpn.md", "vpn.md"),
        )
        await services.ingestor.ingest(
            kb_b, SourceFile(f"# Falcon\n\n{SECRET_B}".encode(), "upload:falcon-secret.md", "falcon-secret.md")
        )
        await services.faq_importer.import_entries(
            kb_b, [FaqEntry("What is the Falcon budget?", ("4.2 million euros, codename Kestrel.",))]
        )
        for key, kb in ((CHAT_A, kb_a), (CHAT_B, kb_b)):
            await services.bindings.bind(key.platform, key.workspace, key.chat, [kb.id])
        policy = ChatPolicy(admins={"test": frozenset({ADMIN.id})})
        await services.jobs.start()
        try:
            yield Chats(services, build_manager(services, policy), kb_a.id, kb_b.id)
        finally:
            await services.jobs.stop()


def _ask(text: str, key: ConversationKey, user: UserRef = PERSON) -> IncomingMessage:
    return IncomingMessage(key=key, message_id="", user=user, text=text)


async def test_a_chat_bound_to_one_knowledge_base_never_sees_another(chats: Chats) -> None:
    manager = chats.manager
    b_target = RecordingTarget()
    in_b = await manager.handle(_ask("What is the Falcon budget and codename?", CHAT_B), b_target)
    assert in_b is not None
    assert "Kestrel" in b_target.replies()[0]  # the knowledge is there, for the chat bound to it

    for question in ("What is the Falcon budget and codename?", "Kestrel", "falcon-secret.md budget 4.2 million"):
        target = RecordingTarget()
        result = await manager.handle(_ask(question, CHAT_A), target)
        assert result is not None
        assert result.turn is not None
        shown = " ".join(target.replies())
        assert "Kestrel" not in shown
        assert "4.2 million" not in shown
        assert all(c.kb_id == chats.kb_a for c in result.turn.candidates)
        assert all(source.title != "falcon-secret.md" for source in result.answer.sources)
        assert all("Kestrel" not in round_[1] for round_ in result.turn.history)
    sources = RecordingTarget()
    await manager.handle(IncomingMessage(CHAT_A, "", PERSON, "/sources", command=Command("sources")), sources)
    assert "falcon" not in sources.replies()[0].lower()
    listed = RecordingTarget()
    await manager.handle(IncomingMessage(CHAT_A, "", ADMIN, "/faq list", command=Command("faq", ("list",))), listed)
    assert "Falcon" not in listed.replies()[0]


async def test_an_admin_upload_is_ingested_with_one_status_message_then_answerable(chats: Chats) -> None:
    data = b"# Parking\n\nVisitors park in the Marigold garage on level minus two; the gate code is 7731."

    async def read() -> bytes:
        return data

    target = RecordingTarget()
    upload = IncomingMessage(
        CHAT_A,
        "",
        ADMIN,
        "/ingest",
        attachments=(Attachment("parking.md", len(data), "text/markdown", read),),
        command=Command("ingest"),
    )
    await chats.manager.handle(upload, target)
    assert target.sent == [messages.ingest_queued(1, "alpha", "en")]  # one message, then edits of it
    final = target.edits[-1][1]
    assert final == "parking.md: indexed, 1 passage."
    assert {ref for ref, _ in target.edits} == {"sent-1"}

    answer = RecordingTarget()
    result = await chats.manager.handle(_ask("Where do visitors park?", CHAT_A), answer)
    assert result is not None
    assert "Marigold" in answer.replies()[0]
    assert [source.title for source in result.answer.sources][:1] == ["parking.md"]


async def test_a_non_admin_upload_is_refused_and_nothing_is_queued(chats: Chats) -> None:
    async def read() -> bytes:
        raise AssertionError("a refused upload must not even be downloaded")

    target = RecordingTarget()
    upload = IncomingMessage(
        CHAT_A, "", PERSON, "/ingest", attachments=(Attachment("x.md", 10, "", read),), command=Command("ingest")
    )
    await chats.manager.handle(upload, target)
    assert target.replies() == [messages.admins_only("ingest", "en")]
    assert await chats.services.job_repo.recent(kb_id=chats.kb_a) == []
