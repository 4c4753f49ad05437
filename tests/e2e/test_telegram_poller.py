"""Telegram long polling with two `ragbot serve` on one PostgreSQL: exactly one polls (Telegram answers a second
poller with 409 Conflict, as the fake does), and when it is killed -9 the other polls within seconds and answers."""

from __future__ import annotations

import re
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from fakes.openai_api import FakeOpenAI
from fakes.slack import FakeSlackAPI
from fakes.telegram import FakeTelegramBotAPI
from harness.instances import Instance, poll, start_instance, stop_instance
from harness.processes import free_port, run_ragbot
from storage.db import Database, DatabaseConfig
from storage.repos.conversations import ConversationRepo
from storage.weaviate.server import WeaviateServer
from tests.conftest import fresh_postgres_database
from tests.e2e.test_instances import HANDBOOK, KB, TELEGRAM_USER, _env, _model_reply

LEASE = 3.0
HOLDER = "telegram=poller role=holder"
STANDBY = "telegram=poller role=standby"
RETRY = 2.0  # how often a standby instance tries to take the lease (PollerLease's default)


def _field(log: str, line_start: str, key: str) -> str:
    """`key`'s value on the first log line holding `line_start`."""
    line = next(line for line in log.splitlines() if line_start in line)
    found = re.search(rf"\b{key}=(\S+)", line)
    assert found is not None, line
    return found.group(1)


async def _answered(fake: FakeTelegramBotAPI, count: int) -> None:
    def done() -> bool:
        shown = fake.bot_messages(TELEGRAM_USER["id"])
        return len(shown) >= count and all("Sources" in message.text for message in shown[:count])

    try:
        await fake.wait_for(done, timeout=60)
    except TimeoutError as exc:
        exc.add_note(f"the chat shows: {fake.visible(TELEGRAM_USER['id'])}")
        raise


async def _stored(database_url: str, seconds: float) -> None:
    """Wait until the person's answer is stored as done (the chat shows it a moment before): killed earlier, its
    process would leave it to be written again by the survivor, a turn take-over this test is not about."""
    db = Database(DatabaseConfig(url=database_url))
    await db.open()
    try:
        conversations = ConversationRepo(db)

        async def done() -> bool:
            found = await conversations.find("telegram", "", str(TELEGRAM_USER["id"]))
            latest = await conversations.recent(found.id, 1) if found is not None else []
            return bool(latest) and latest[-1].role == "assistant" and latest[-1].status == "done"

        assert await poll(done, seconds), "the answer was not stored as done"
    finally:
        await db.close()


async def _holder(instances: list[Instance], seconds: float) -> Instance:
    """The one instance whose log says it took the poller's lease (waiting up to `seconds`)."""

    async def one() -> bool:
        return sum(HOLDER in instance.log_text() for instance in instances) == 1

    assert await poll(one, seconds), "\n".join(i.log_text()[-2000:] for i in instances)
    return next(instance for instance in instances if HOLDER in instance.log_text())


async def test_one_instance_polls_and_another_takes_over_within_seconds_of_its_death(
    tmp_path: Path, postgres_url: str, weaviate_server: WeaviateServer, model_dir: Path, tiktoken_dir: Path | None
) -> None:
    database_url = await fresh_postgres_database(postgres_url)
    async with (
        FakeOpenAI(api_key="x") as model,
        FakeSlackAPI() as slack,
        FakeTelegramBotAPI() as telegram,
        AsyncExitStack() as stack,
    ):
        model.reply_for = _model_reply
        env: dict[str, Any] = _env(
            database_url, weaviate_server, model, slack, telegram, free_port(), model_dir, tiktoken_dir
        )
        for name in [key for key in env if key.startswith(("SLACK_", "TELEGRAM_WEBHOOK"))]:
            del env[name]
        env.update(TELEGRAM_MODE="polling", INSTANCE_LEASE=str(LEASE))
        (tmp_path / "handbook.md").write_text(HANDBOOK)
        cli = {**env, "RAGBOT_DATA_DIR": str(tmp_path / "cli")}
        for args in (("kb", "create", KB), ("ingest", "handbook.md", "--kb", KB)):
            code, _, err = await run_ragbot(cli, tmp_path, *args)
            assert code == 0, err
        instances = []
        for name in ("i0", "i1"):
            instance = await start_instance(env, tmp_path, name)
            stack.push_async_callback(stop_instance, instance)
            instances.append(instance)
        holder = await _holder(instances, 30)
        standby = next(instance for instance in instances if instance is not holder)
        await standby.wait_logged(STANDBY, seconds=30)
        await standby.wait_logged("instances=2", seconds=30)
        telegram.queue_update(telegram.private_message("How do I install the VPN client?", user=TELEGRAM_USER))
        await _answered(telegram, 1)
        await _stored(database_url, 30)
        # Only the holder polls; the other names it as the lease's holder: its instance id, as its presence says.
        owner = _field(holder.log_text(), HOLDER, "owner")
        assert _field(standby.log_text(), STANDBY, "holder") == owner
        assert owner in _field(standby.log_text(), "instances=2", "live").split(",")
        assert "telegram=polling" not in standby.log_text()

        holder.process.kill()
        await holder.process.wait()
        killed_at = time.monotonic()
        survivor = standby
        await survivor.wait_logged(HOLDER, seconds=LEASE + 20)
        took = time.monotonic() - killed_at
        telegram.queue_update(telegram.private_message("When is lunch served?", user=TELEGRAM_USER))
        await _answered(telegram, 2)

    print(f"poller: taken over {took:.1f} s after the holder's death (lease {LEASE} s)")
    assert took <= LEASE + RETRY + 2.0, took  # the lease, the standby's next try, and a margin for a busy machine
    for instance in instances:
        assert "telegram=conflict" not in instance.log_text(), instance.log_text()[-2000:]
    assert telegram.conflicts == []  # the fake answered no getUpdates with 409 all along
