"""The command registry: who may run what, the refusal a person gets in the terms of what they did, and which
command a mistyped word resembles, as each platform writes it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.commands.builtin import default_registry
from bot.commands.registry import Asker
from bot.types import Attachment, Command, CommandStyle, ConversationKey, IncomingMessage, SourceLink, UserRef
from bot.words import messages
from storage.records import ConversationRecord, JobRecord
from tests.support.chat import RecordingTarget
from tests.unit.bot.chat.stand_ins import NO_COMMAND_PARTS, NOW

DM = ConversationKey("test", "team", "dm-bob")
SLACK = CommandStyle(prefix="/kb ", bare="kb", attachments=False)


class _Chat:
    """A ChatControl stand-in: a chat nobody has touched (refusals never reach it)."""

    async def existing(self, key: ConversationKey) -> ConversationRecord | None:
        return ConversationRecord("c0", key.platform, key.workspace, key.chat, key.thread, NOW)

    def tenant(self, key: ConversationKey) -> str:
        return ""

    async def reset(self, key: ConversationKey) -> None:
        raise AssertionError("a refused command changed the chat")

    def stop(self, key: ConversationKey, conversation_id: str) -> bool:
        return False

    async def readable_kb_ids(self, key: ConversationKey) -> list[str]:
        return []

    async def missing_kb_names(self, key: ConversationKey) -> list[str]:
        return []

    def may_read(self, platform: str, kb_name: str) -> bool:
        return True

    def allowed_kbs(self, platform: str) -> tuple[str, ...] | None:
        return None

    def knowledge_changed(self) -> None:
        raise AssertionError("a refused command changed the knowledge bases")

    async def last_question(self, key: ConversationKey, author: str) -> str:
        return ""

    async def last_sources(self, key: ConversationKey) -> list[SourceLink]:
        return []

    def watch_jobs(self, watcher: Callable[[JobRecord], None]) -> Callable[[], None]:
        raise AssertionError("a refused command watched jobs")


async def _never_read() -> bytes:
    raise AssertionError("the file of a refused command was downloaded")


FILE = Attachment("menu.md", 6, "text/markdown", _never_read)


@pytest.mark.parametrize(
    ("command", "lang", "reply"),
    [
        (Command("ingest", implied=True), "en", messages.files_admins_only("en")),
        (Command("ingest", implied=True), "zh", messages.files_admins_only("zh")),
        (Command("ingest"), "en", messages.admins_only("ingest", "en")),
        (Command("faq", ("import",), "import"), "en", messages.admins_only("faq", "en")),
    ],
)
async def test_a_non_admin_is_refused_in_the_terms_of_what_they_did_and_the_file_is_left_alone(
    command: Command, lang: str, reply: str
) -> None:
    message = IncomingMessage(DM, "m1", UserRef("u-bob"), "", attachments=(FILE,), command=command)
    target = RecordingTarget()
    await default_registry().dispatch(_Chat(), NO_COMMAND_PARTS, message, target, lang=lang, is_admin=False)
    assert target.replies() == [reply]


@pytest.mark.parametrize(
    ("word", "asker", "suggestion"),
    [
        ("jbos", Asker(is_admin=True), "/jobs"),
        ("sorces", Asker(is_admin=False), "/sources"),
        ("HLEP", Asker(is_admin=False), "/help"),
        ("jbos", Asker(is_admin=True, style=SLACK), "/kb jobs"),
        ("lsit", Asker(is_admin=False, style=SLACK), "/kb list"),
        ("infos", Asker(is_admin=False, style=SLACK), "/kb info"),
        ("jbos", Asker(is_admin=False, style=SLACK), None),  # /kb jobs is for admins only
        ("frobnicate", Asker(is_admin=True, style=SLACK), None),
        ("vpn", Asker(is_admin=True, style=SLACK), None),
        ("lunch", Asker(is_admin=False, style=SLACK), None),
        ("start", Asker(is_admin=False), None),  # unlisted commands are never suggested
    ],
)
def test_a_mistyped_word_suggests_the_command_it_resembles_among_those_the_person_may_run(
    word: str, asker: Asker, suggestion: str | None
) -> None:
    assert default_registry().suggest(word, asker) == suggestion
