"""Drill: Slack tokens at rest. A copy of the database (a backup, a dump, a stolen file) holds no token: they are
sealed with a key kept outside it, in an owner-only file; the data dir and the SQLite files are owner-only too;
`ragbot secrets rotate` moves every token to a new key and drops the old one; rows from before sealing still work."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio
from cryptography.fernet import Fernet, InvalidToken
from slack_sdk.oauth.installation_store import Installation

from adapters.slack.app import BOT_SCOPES, INSTALL_PATH, REDIRECT_PATH
from adapters.slack.stores import DatabaseInstallationStore
from bot.app.settings import Settings
from fakes.slack import events
from harness.processes import ROOT, SETTINGS_PREFIXES, run_ragbot
from storage.db import Database, DatabaseConfig
from storage.repos.slack_installs import SlackInstallRepo
from storage.secret_box import KEY_FILE, SEALED, KeyRing, SecretBox, SecretUnreadable
from tests.conftest import EmbeddedSettings
from tests.e2e.test_slack import TOKEN, Slack
from tests.security.slack_support import slack_scene

CLIENT_ID = "111.222"
CLIENT_SECRET = "client-secret"
NEW_TOKEN = "xoxb-2-sealed-bot-token-of-the-new-workspace"
# Every secret an installation may carry: bot, user and refresh tokens, the incoming webhook's URL.
SECRETS = {
    "bot_token": "xoxe.xoxb-1-bot-token-kept-secret",
    "bot_refresh_token": "xoxe-1-bot-refresh-kept-secret",
    "user_token": "xoxp-1-user-token-kept-secret",
    "user_refresh_token": "xoxe-1-user-refresh-kept-secret",
    "incoming_webhook_url": "https://hooks.slack.com/services/T1/B1/webhook-kept-secret",
}


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _sqlite_files(data_dir: Path) -> Iterator[Path]:
    database = data_dir / "ragbot.sqlite3"
    for file in (database, database.with_name(database.name + "-wal"), database.with_name(database.name + "-shm")):
        if file.exists():
            yield file


def _stored_values(database: Path) -> Iterator[str]:
    """Every value of every column of every table, as text."""
    with sqlite3.connect(database) as connection:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in connection.execute(f'SELECT * FROM "{table}"'):
                yield from (str(value) for value in row)


def _leaks(data_dir: Path, secrets: list[str]) -> list[str]:
    """The secrets found in the database: in any column, or anywhere in its files' bytes (free pages, the WAL)."""
    found = {secret for value in _stored_values(data_dir / "ragbot.sqlite3") for secret in secrets if secret in value}
    for file in _sqlite_files(data_dir):
        found |= {secret for secret in secrets if secret.encode() in file.read_bytes()}
    return sorted(found)


@pytest_asyncio.fixture(scope="module")
async def slack(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[Slack]:
    data_dir = tmp_path_factory.mktemp("slack-secrets") / "data"  # made by ragbot
    async with slack_scene(
        data_dir, embedded_settings, {}, SLACK_CLIENT_ID=CLIENT_ID, SLACK_CLIENT_SECRET=CLIENT_SECRET
    ) as scene:
        yield scene


async def test_an_installs_tokens_are_not_in_a_copy_of_the_database(slack: Slack) -> None:
    slack.fake.register_oauth_code(
        "code-sealed",
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        team_id="T0SEALED",
        team_name="Sealed",
        installer_user_id="U0SEALED",
        bot_token=NEW_TOKEN,
        bot_user_id=events.BOT_USER_ID,
        bot_id="B0SEALED",
        scope=",".join(BOT_SCOPES),
    )
    async with aiohttp.ClientSession() as session:
        async with session.get(slack.url + INSTALL_PATH, allow_redirects=False) as page:
            found = re.search(r"state=([^&\"']+)", page.headers.get("Location") or await page.text())
            assert found is not None
        query = {"code": "code-sealed", "state": found.group(1)}
        headers = {"Cookie": f"slack-app-oauth-state={found.group(1)}"}
        async with session.get(slack.url + REDIRECT_PATH, params=query, headers=headers) as done:
            assert done.status == 200
    data_dir = slack.settings.data_dir
    assert _leaks(data_dir, [NEW_TOKEN, TOKEN]) == []
    repo = SlackInstallRepo(slack.services.db, box=SecretBox(KeyRing.in_dir(data_dir)))
    installed = await repo.find(CLIENT_ID, "", "T0SEALED")
    assert installed is not None
    assert installed.bot_token == NEW_TOKEN  # and ragbot reads it back


async def test_the_key_file_the_data_dir_and_the_database_files_are_owner_only(slack: Slack) -> None:
    data_dir = slack.settings.data_dir
    assert _mode(data_dir / KEY_FILE) == 0o600
    assert _mode(data_dir) == 0o700
    files = list(_sqlite_files(data_dir))
    assert len(files) >= 2  # the database and its write-ahead log
    assert {file.name: _mode(file) for file in files} == {file.name: 0o600 for file in files}


async def _store(data_dir: Path) -> tuple[Database, DatabaseInstallationStore]:
    database = Database(DatabaseConfig(url=f"sqlite:///{data_dir / 'ragbot.sqlite3'}"))
    await database.open()
    repo = SlackInstallRepo(database, box=SecretBox(KeyRing.in_dir(data_dir)))
    return database, DatabaseInstallationStore(repo, client_id=CLIENT_ID)


def _installation(team_id: str) -> Installation:
    return Installation(team_id=team_id, user_id="U1", bot_id="B1", bot_user_id="U0BOT", **SECRETS)


async def test_every_kind_of_token_is_sealed_and_read_back(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    database, store = await _store(data_dir)
    try:
        await store.async_save(_installation("T1"))
        found = await store.async_find_installation(enterprise_id=None, team_id="T1")
    finally:
        await database.close()
    assert found is not None
    assert {name: getattr(found, name) for name in SECRETS} == SECRETS
    assert _leaks(data_dir, list(SECRETS.values())) == []


def _plain_row(data_dir: Path, team_id: str) -> None:
    """An installation as ragbot stored it before tokens were sealed."""
    installation = {"team_id": team_id, "user_id": "U1", "bot_id": "B1", "bot_user_id": "U0BOT", **SECRETS}
    with sqlite3.connect(data_dir / "ragbot.sqlite3") as connection:
        connection.execute(
            "INSERT INTO slack_installation (id, client_id, enterprise_id, team_id, bot_token, bot_id, bot_user_id,"
            " bot_scopes, installer_user_id, is_enterprise_install, installation, installed_at, updated_at)"
            " VALUES (?, ?, '', ?, ?, 'B1', 'U0BOT', '', 'U1', 0, json(?), '2026-01-01 00:00:00',"
            " '2026-01-01 00:00:00')",
            (f"plain-{team_id}", CLIENT_ID, team_id, SECRETS["bot_token"], json.dumps(installation)),
        )


async def test_a_row_from_before_sealing_is_read_and_sealed_at_its_next_save(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    database, store = await _store(data_dir)
    try:
        _plain_row(data_dir, "T0OLD")
        found = await store.async_find_installation(enterprise_id=None, team_id="T0OLD")
        assert found is not None
        assert found.bot_token == SECRETS["bot_token"]
        await store.async_save(found)
    finally:
        await database.close()
    # In the columns; its old bytes may stay in free pages until `ragbot secrets rotate` compacts the file.
    stored = list(_stored_values(data_dir / "ragbot.sqlite3"))
    assert [secret for secret in SECRETS.values() if any(secret in value for value in stored)] == []


def _env(data_dir: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(SETTINGS_PREFIXES)}
    return {**env, "RAGBOT_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT)}


async def test_rotating_the_key_reseals_every_token_and_the_old_key_opens_none(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    database, store = await _store(data_dir)
    try:
        await store.async_save(_installation("T0SEALED"))
        _plain_row(data_dir, "T0OLD")
    finally:
        await database.close()
    (old_key,) = KeyRing(data_dir / KEY_FILE).keys

    code, out, err = await run_ragbot(_env(data_dir), tmp_path, "secrets", "rotate")

    assert code == 0, err
    assert "2 Slack installation(s)" in out
    ring = KeyRing(data_dir / KEY_FILE)
    assert len(ring.keys) == 1
    assert ring.keys[0] != old_key
    assert _mode(data_dir / KEY_FILE) == 0o600
    assert _leaks(data_dir, list(SECRETS.values())) == []
    sealed = [value for value in _stored_values(data_dir / "ragbot.sqlite3") if value.startswith(SEALED)]
    assert sealed
    with pytest.raises(InvalidToken):
        Fernet(old_key).decrypt(sealed[0].removeprefix(SEALED).encode())
    database, store = await _store(data_dir)
    try:
        for team in ("T0SEALED", "T0OLD"):
            found = await store.async_find_installation(enterprise_id=None, team_id=team)
            assert found is not None
            assert {name: getattr(found, name) for name in SECRETS} == SECRETS
    finally:
        await database.close()


def test_a_running_service_opens_tokens_sealed_after_a_rotation(tmp_path: Path) -> None:
    running = SecretBox(KeyRing.in_dir(tmp_path))
    before = running.seal("xoxb-before")
    rotating = KeyRing(tmp_path / KEY_FILE)
    rotating.write([Fernet.generate_key(), *rotating.keys])
    after = SecretBox(rotating).reseal(before)
    rotating.write(rotating.keys[:1])
    assert running.open(after) == "xoxb-before"
    assert running.seal("xoxb-new") != running.seal("xoxb-new")  # Fernet: a fresh IV each time
    assert SecretBox(rotating).open(running.seal("xoxb-new")) == "xoxb-new"  # sealed with the new key


def test_instances_with_their_own_data_dirs_open_each_others_secrets_through_one_key_file(tmp_path: Path) -> None:
    shared = tmp_path / "keys" / "ragbot-secrets.key"
    first, second = (
        Settings(_env_file=None, RAGBOT_DATA_DIR=tmp_path / name, RAGBOT_SECRETS_KEY_FILE=shared)
        for name in ("i0", "i1")
    )
    sealed = SecretBox(KeyRing.at(first.secrets_key_file())).seal("xoxb-workspace-token")
    assert SecretBox(KeyRing.at(second.secrets_key_file())).open(sealed) == "xoxb-workspace-token"
    assert stat.S_IMODE(shared.stat().st_mode) == 0o600
    # Each with a ring of its own (the default, in its data dir), one cannot open what the other sealed.
    alone = Settings(_env_file=None, RAGBOT_DATA_DIR=tmp_path / "i2")
    assert alone.secrets_key_file() == (tmp_path / "i2" / KEY_FILE).resolve()
    with pytest.raises(SecretUnreadable):
        SecretBox(KeyRing.at(alone.secrets_key_file())).open(sealed)
