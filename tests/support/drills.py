"""What every failure drill measures: the accepted questions left without a final answer, and what the chat shows.

A question is accepted once it is stored (the platform was told "received"). It is answered for good when its answer
row is final: `done`, or `failed` with an apology shown. `streaming` (never finished) and `undelivered` (finished but
never shown) are what a drill must never leave behind: a final answer that never reaches the chat is the worst bug a
chat bot has.
"""

from __future__ import annotations

import errno
import itertools
import json
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from adapters.telegram.app import create as create_telegram
from bot.app.manager import build_manager, chat_policy
from bot.app.services import Services, build_services
from bot.app.settings import Settings
from bot.chat.manager import ConversationManager
from bot.metrics import ChatMetrics
from fakes.openai_api import FakeOpenAI
from fakes.telegram import FakeTelegramBotAPI
from harness.instances import poll
from rag.ingest.documents import SourceFile
from storage.db import Database

# Every user message with its answer (none when no answer row was written), oldest first.
_TURNS = text(
    "SELECT q.text, a.status, a.meta FROM message q "
    "LEFT JOIN message a ON a.request_id = q.request_id AND a.role = 'assistant' "
    "WHERE q.role = 'user' ORDER BY q.created_at"
)
_FINAL = frozenset({"done", "failed"})


@dataclass(frozen=True, slots=True)
class StoredTurn:
    """One accepted question as stored: its text, its answer's status ("" when there is none) and outcome."""

    question: str
    status: str
    outcome: str

    @property
    def final(self) -> bool:
        """Whether the answer is final: done, or failed with its apology."""
        return self.status in _FINAL


async def stored_turns(db: Database) -> list[StoredTurn]:
    """Every accepted question with its answer's status, oldest first."""
    async with db.engine.connect() as connection:
        rows = (await connection.execute(_TURNS)).all()
    return [StoredTurn(question, status or "", _outcome(meta)) for question, status, meta in rows]


def _outcome(meta: Any) -> str:
    if isinstance(meta, str):  # a raw statement hands JSON columns back as text
        meta = json.loads(meta)
    return str(meta.get("outcome", "")) if isinstance(meta, dict) else ""


async def unfinished(db: Database, settle: float = 10.0) -> list[StoredTurn]:
    """The drill's figure, which must be empty: accepted questions whose answer is missing, still `streaming`, or
    `undelivered`, once no answer has been `streaming` (being written) for up to `settle` seconds.

    An answer is stored just after the chat shows it, so a drill that saw the chat asks a moment before the store.
    """

    async def written() -> bool:
        return all(turn.status != "streaming" for turn in await stored_turns(db))

    await poll(written, settle)
    return [turn for turn in await stored_turns(db) if not turn.final]


def undelivered_total(metrics: ChatMetrics) -> int:
    """`ragbot_chat_undelivered_total` summed over platforms, as /metrics shows it."""
    samples = (sample for family in metrics.collect() for sample in family.samples)
    return int(sum(sample.value for sample in samples if sample.name == "ragbot_chat_undelivered_total"))


async def telegram_reply(fake: FakeTelegramBotAPI, chat_id: int, within: float = 30.0) -> str:
    """The bot's first message in a private chat, once it is there: in a private chat the answer grows as a draft and
    is sent as a message only when final, so the first message is the final answer (or the apology)."""
    try:
        await fake.wait_for(lambda: fake.visible(chat_id), timeout=within)
    except TimeoutError as exc:
        exc.add_note(f"chat {chat_id} drafts: {fake.drafts(chat_id)}")
        raise
    return fake.visible(chat_id)[0]


HANDBOOK = (
    b"# VPN\n\nThe VPN client is installed from the Software Center. It connects with your badge number.\n\n"
    b"# Lunch\n\nLunch is served from noon in the atrium on the second floor.\n"
)


def model_env(model: FakeOpenAI, *, retries: int = 0, **more: Any) -> dict[str, Any]:
    """The settings of a chat model served by `model`, retried `retries` times by the openai client."""
    return {
        "CHAT_MODEL": "fake-model",
        "CHAT_MODEL_BASE_URL": model.base_url,
        "CHAT_MODEL_API_KEY": "test-key",
        "CHAT_MODEL_MAX_RETRIES": retries,
        **more,
    }


def telegram_env(fake: FakeTelegramBotAPI) -> dict[str, Any]:
    """The settings of a Telegram bot polling `fake`, open to everyone, reading the handbook."""
    return {
        "DEFAULT_KNOWLEDGE_BASES": "handbook",
        "TELEGRAM_BOT_TOKEN": fake.token,
        "TELEGRAM_ALLOW_EVERYONE": True,
        "TELEGRAM_API_BASE_URL": fake.base_url,
        "TELEGRAM_FILE_BASE_URL": fake.base_file_url,
    }


@dataclass
class TelegramWorld:
    """ragbot's services and its Telegram adapter polling a fake Bot API, with the handbook indexed."""

    services: Services
    fake: FakeTelegramBotAPI
    manager: ConversationManager
    metrics: ChatMetrics
    _users: Iterator[int] = field(default_factory=lambda: itertools.count(8001))

    def ask(self, question: str) -> int:
        """A new person asks `question` in their private chat with the bot; returns the chat's id."""
        user_id = next(self._users)
        person = {"id": user_id, "is_bot": False, "first_name": f"Person{user_id}", "language_code": "en"}
        self.fake.queue_update(self.fake.private_message(question, user=person))
        return user_id


@asynccontextmanager
async def telegram_world(fake: FakeTelegramBotAPI, settings: Settings) -> AsyncIterator[TelegramWorld]:
    """Start the services on `settings` (telegram_env's among them), index the handbook, and poll `fake`."""
    async with build_services(settings) as services:
        kb = await services.knowledge.create("handbook", {})
        await services.ingestor.ingest(kb, SourceFile(HANDBOOK, "upload:handbook.md", "handbook.md"))
        metrics = ChatMetrics()
        manager = build_manager(services, chat_policy(settings), metrics=metrics)
        adapter = create_telegram(manager, settings, services.db)
        await adapter.start()
        try:
            yield TelegramWorld(services, fake, manager, metrics)
        finally:
            await adapter.stop()


@contextmanager
def small_disk(path: Path, size: str) -> Iterator[Path]:
    """A filesystem of `size` (tmpfs, e.g. "16m") mounted on `path` for the body: a disk that fills up.

    Mounting needs CAP_SYS_ADMIN (root): without it this fails, naming what is missing, rather than skip.
    """
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.fail(f"cannot mount a {size} tmpfs on {path} (needs root): {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "--lazy", str(path)], check=True)


def fill(path: Path) -> Path:
    """Write a file in `path` until its filesystem has no byte left (ENOSPC); the file, to delete to free the space."""
    filler = path / "filler"
    chunk = b"\0" * 65536
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(chunk)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
        try:
            while True:  # the last bytes, less than a chunk
                out.write(b"\0")
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    return filler
