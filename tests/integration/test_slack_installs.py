"""Slack installations and OAuth states on SQLite and PostgreSQL: the repo, then slack_sdk's store protocols over it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from slack_sdk.oauth.installation_store import Bot, Installation

from adapters.slack.stores import INSTALL_CACHE_SECONDS, DatabaseInstallationStore, DatabaseOAuthStateStore
from storage.db import Database
from storage.records import SlackInstall
from storage.repos.slack_installs import SlackInstallRepo
from storage.secret_box import KeyRing, SecretBox
from tests.integration.sql_count import count_statements

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CLIENT = "1111.2222"


class FakeClock:
    """Our clock, moved by the test: states expire when the test says so, not after real seconds."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def repo(db: Database, clock: FakeClock, tmp_path: Path) -> SlackInstallRepo:
    return SlackInstallRepo(db, box=SecretBox(KeyRing.in_dir(tmp_path / "keys")), clock=clock)


def _install(team_id: str = "T1", token: str = "xoxb-1", **changes: object) -> SlackInstall:
    values: dict[str, object] = {
        "client_id": CLIENT,
        "team_id": team_id,
        "bot_token": token,
        "bot_id": "B1",
        "bot_user_id": "U0BOT",
        "bot_scopes": ("app_mentions:read", "chat:write"),
        "installer_user_id": "U1",
        "installation": {"team_id": team_id, "bot_token": token, "installed_at": 1772366400.25},
    }
    values.update(changes)
    return SlackInstall(**values)  # type: ignore[arg-type]


async def test_saved_installation_is_found_replaced_and_deleted(repo: SlackInstallRepo, clock: FakeClock) -> None:
    saved = await repo.save(_install())
    assert saved == await repo.find(CLIENT, "", "T1")
    assert (saved.bot_token, saved.bot_id, saved.bot_user_id) == ("xoxb-1", "B1", "U0BOT")
    assert saved.bot_scopes == ("app_mentions:read", "chat:write")
    assert saved.installation == {"team_id": "T1", "bot_token": "xoxb-1", "installed_at": 1772366400.25}
    assert (saved.installed_at, saved.updated_at) == (T0, T0)

    clock.advance(60)
    await repo.save(_install(token="xoxb-2", installer_user_id="U2", bot_scopes=("chat:write",)))
    found = await repo.find(CLIENT, "", "T1")
    assert found is not None
    assert (found.bot_token, found.installer_user_id, found.bot_scopes) == ("xoxb-2", "U2", ("chat:write",))
    assert (found.installed_at, found.updated_at) == (T0, T0 + timedelta(seconds=60))
    assert [record.team_id for record in await repo.list_workspaces()] == ["T1"]

    assert await repo.delete(CLIENT, "", "T1") is True
    assert await repo.find(CLIENT, "", "T1") is None
    assert await repo.delete(CLIENT, "", "T1") is False


async def test_tokens_stay_out_of_the_record_repr(repo: SlackInstallRepo) -> None:
    saved = await repo.save(_install(token="xoxb-secret"))
    assert "xoxb-secret" not in repr(saved)


async def test_workspaces_and_apps_are_isolated(repo: SlackInstallRepo) -> None:
    await repo.save(_install("T1", "xoxb-t1"))
    await repo.save(_install("T2", "xoxb-t2"))
    await repo.save(_install("T1", "xoxb-other-app", client_id="3333.4444"))

    one, two = await repo.find(CLIENT, "", "T1"), await repo.find(CLIENT, "", "T2")
    assert (one and one.bot_token, two and two.bot_token) == ("xoxb-t1", "xoxb-t2")
    assert [r.team_id for r in await repo.list_workspaces(CLIENT)] == ["T1", "T2"]
    assert await repo.find(CLIENT, "E1", "T1") is None

    assert await repo.delete(CLIENT, "", "T1") is True
    other_app = await repo.find("3333.4444", "", "T1")
    assert other_app is not None
    assert other_app.bot_token == "xoxb-other-app"
    two = await repo.find(CLIENT, "", "T2")
    assert two is not None
    assert two.bot_token == "xoxb-t2"

    assert await repo.delete_all("", "T1") == 1
    assert [(r.client_id, r.team_id) for r in await repo.list_workspaces()] == [(CLIENT, "T2")]


async def test_org_wide_install_is_keyed_by_its_enterprise(repo: SlackInstallRepo) -> None:
    saved = await repo.save(_install("T9", "xoxb-org", enterprise_id="E1", is_enterprise_install=True))
    assert (saved.enterprise_id, saved.team_id, saved.is_enterprise_install) == ("E1", "", True)
    found = await repo.find(CLIENT, "E1", "")
    assert found is not None
    assert found.bot_token == "xoxb-org"
    assert await repo.find(CLIENT, "E1", "T9") is None
    assert await repo.find(CLIENT, "", "") is None


async def test_state_is_consumed_once(repo: SlackInstallRepo) -> None:
    await repo.issue_state("s1", T0 + timedelta(minutes=10), now=T0, limit=100)
    assert await repo.consume_state("s1", T0) is True
    assert await repo.consume_state("s1", T0) is False
    assert await repo.consume_state("never-issued", T0) is False


async def test_expired_state_is_refused_and_gone(repo: SlackInstallRepo) -> None:
    await repo.issue_state("late", T0, now=T0 - timedelta(minutes=10), limit=100)
    assert await repo.consume_state("late", T0) is False  # expiry is exclusive, as in slack_sdk's stores
    assert await repo.consume_state("late", T0 - timedelta(minutes=1)) is False  # deleted by the refusal


async def test_consuming_sweeps_expired_states_only(repo: SlackInstallRepo) -> None:
    await repo.issue_state("abandoned", T0, now=T0 - timedelta(minutes=10), limit=100)
    await repo.issue_state("live", T0 + timedelta(minutes=10), now=T0 - timedelta(minutes=10), limit=100)
    assert await repo.consume_state("unrelated", T0 + timedelta(minutes=1)) is False
    assert await repo.consume_state("abandoned", T0 - timedelta(minutes=1)) is False
    assert await repo.consume_state("live", T0 + timedelta(minutes=1)) is True


async def test_issuing_sweeps_expired_states_and_keeps_the_newest_within_the_limit(repo: SlackInstallRepo) -> None:
    for minute in range(5):
        await repo.issue_state(f"early-{minute}", T0 + timedelta(minutes=minute), now=T0, limit=3)
    assert await repo.count_states() == 3
    await repo.issue_state("later", T0 + timedelta(minutes=20), now=T0 + timedelta(minutes=4), limit=3)
    # The three kept (expiring at minutes 2, 3 and 4) have all expired by minute 4.
    assert await repo.count_states() == 1
    assert await repo.consume_state("later", T0 + timedelta(minutes=5)) is True


# slack_sdk's protocols over the repo


@pytest.fixture
def store(repo: SlackInstallRepo) -> DatabaseInstallationStore:
    return DatabaseInstallationStore(repo, CLIENT)


def _installation(**changes: object) -> Installation:
    values: dict[str, object] = {
        "app_id": "A1",
        "enterprise_id": "E1",
        "enterprise_name": "Acme Org",
        "enterprise_url": "https://acme.enterprise.slack.com/",
        "team_id": "T1",
        "team_name": "Acme",
        "bot_token": "xoxe.xoxb-1-abc",
        "bot_id": "B1",
        "bot_user_id": "U0BOT",
        "bot_scopes": "app_mentions:read,chat:write",
        "bot_refresh_token": "xoxe-1-bot-refresh",
        "bot_token_expires_at": 1772409600,
        "user_id": "U1",
        "user_token": "xoxp-1-user",
        "user_scopes": "search:read",
        "user_refresh_token": "xoxe-1-user-refresh",
        "user_token_expires_at": 1772413200,
        "incoming_webhook_url": "https://hooks.slack.com/services/T1/B2/x",
        "incoming_webhook_channel": "#general",
        "incoming_webhook_channel_id": "C1",
        "incoming_webhook_configuration_url": "https://acme.slack.com/services/B2",
        "token_type": "bot",
        "installed_at": 1772366400.123456789,
        "custom_values": {"plan": "pro", "seats": 12},
    }
    values.update(changes)
    return Installation(**values)  # type: ignore[arg-type]


async def test_store_round_trips_every_field_of_an_installation(store: DatabaseInstallationStore) -> None:
    installation = _installation()
    await store.async_save(installation)

    found = await store.async_find_installation(enterprise_id="E1", team_id="T1")
    assert found is not None
    assert vars(found) == vars(installation)
    assert found.installed_at == 1772366400.123456789
    assert found.bot_token_expires_at == 1772409600
    assert found.user_refresh_token == "xoxe-1-user-refresh"
    assert found.incoming_webhook_url == "https://hooks.slack.com/services/T1/B2/x"
    assert found.get_custom_value("seats") == 12

    bot = await store.async_find_bot(enterprise_id="E1", team_id="T1")
    assert bot is not None
    assert vars(bot) == vars(installation.to_bot())
    assert (bot.bot_token, bot.bot_scopes, bot.bot_refresh_token) == (
        "xoxe.xoxb-1-abc",
        ["app_mentions:read", "chat:write"],
        "xoxe-1-bot-refresh",
    )


async def test_store_keeps_the_bot_columns_beside_the_json(
    store: DatabaseInstallationStore, repo: SlackInstallRepo
) -> None:
    await store.async_save(_installation())
    record = await repo.find(CLIENT, "E1", "T1")
    assert record is not None
    assert (record.bot_token, record.bot_id, record.bot_user_id, record.installer_user_id) == (
        "xoxe.xoxb-1-abc",
        "B1",
        "U0BOT",
        "U1",
    )
    assert record.bot_scopes == ("app_mentions:read", "chat:write")
    assert record.is_enterprise_install is False


async def test_store_finds_nothing_for_another_workspace(store: DatabaseInstallationStore) -> None:
    await store.async_save(_installation())
    assert await store.async_find_bot(enterprise_id="E1", team_id="T2") is None
    assert await store.async_find_installation(enterprise_id=None, team_id="T1") is None


async def test_installation_is_found_for_its_installer_only(store: DatabaseInstallationStore) -> None:
    await store.async_save(_installation())
    mine = await store.async_find_installation(enterprise_id="E1", team_id="T1", user_id="U1")
    assert mine is not None
    assert mine.user_token == "xoxp-1-user"
    assert await store.async_find_installation(enterprise_id="E1", team_id="T1", user_id="U2") is None


async def test_org_wide_install_is_found_from_any_of_its_workspaces(store: DatabaseInstallationStore) -> None:
    await store.async_save(_installation(team_id=None, team_name=None, is_enterprise_install=True))
    bot = await store.async_find_bot(enterprise_id="E1", team_id="T7", is_enterprise_install=True)
    assert bot is not None
    assert (bot.bot_token, bot.team_id, bot.is_enterprise_install) == ("xoxe.xoxb-1-abc", None, True)
    found = await store.async_find_installation(enterprise_id="E1", team_id="T7", is_enterprise_install=True)
    assert found is not None
    assert found.enterprise_url == "https://acme.enterprise.slack.com/"
    assert await store.async_find_bot(enterprise_id="E1", team_id="T7") is None


async def test_delete_all_then_nothing_is_found(store: DatabaseInstallationStore) -> None:
    await store.async_save(_installation())
    await store.async_save(_installation(team_id="T2", bot_token="xoxb-t2"))
    await store.async_delete_all(enterprise_id="E1", team_id="T1")
    assert await store.async_find_bot(enterprise_id="E1", team_id="T1") is None
    assert await store.async_find_installation(enterprise_id="E1", team_id="T1") is None
    other = await store.async_find_bot(enterprise_id="E1", team_id="T2")
    assert other is not None
    assert other.bot_token == "xoxb-t2"


async def test_reinstall_without_a_bot_keeps_the_stored_bot(store: DatabaseInstallationStore) -> None:
    await store.async_save(_installation())
    await store.async_save(
        _installation(
            bot_token=None,
            bot_id=None,
            bot_user_id=None,
            bot_scopes="",
            bot_refresh_token=None,
            bot_token_expires_at=None,
            user_id="U2",
            user_token="xoxp-2-user",
            installed_at=1772370000.0,
        )
    )
    found = await store.async_find_installation(enterprise_id="E1", team_id="T1")
    assert found is not None
    assert (found.user_id, found.user_token, found.installed_at) == ("U2", "xoxp-2-user", 1772370000.0)
    assert (found.bot_token, found.bot_scopes, found.bot_token_expires_at) == (
        "xoxe.xoxb-1-abc",
        ["app_mentions:read", "chat:write"],
        1772409600,
    )


async def test_saved_bot_replaces_the_installation_bot_only(store: DatabaseInstallationStore) -> None:
    await store.async_save(_installation())
    bot = await store.async_find_bot(enterprise_id="E1", team_id="T1")
    assert bot is not None
    # As slack_sdk's token rotator builds it: a copy through to_dict_for_copying(), with the new token.
    rotated = Bot(**{**bot.to_dict_for_copying(), "bot_token": "xoxe.xoxb-1-new", "bot_token_expires_at": 1772453000})
    await store.async_save_bot(rotated)

    found = await store.async_find_installation(enterprise_id="E1", team_id="T1")
    assert found is not None
    assert (found.bot_token, found.bot_token_expires_at) == ("xoxe.xoxb-1-new", 1772453000)
    assert (found.user_token, found.incoming_webhook_channel_id) == ("xoxp-1-user", "C1")
    assert found.installed_at == 1772366400.123456789


async def test_bot_saved_alone_is_a_bot_not_an_installation(store: DatabaseInstallationStore) -> None:
    bot = Bot(team_id="T5", bot_token="xoxb-5", bot_id="B5", bot_user_id="U5", installed_at=1772366400.5)
    await store.async_save_bot(bot)
    found = await store.async_find_bot(enterprise_id=None, team_id="T5")
    assert found is not None
    assert vars(found) == vars(bot)
    assert await store.async_find_installation(enterprise_id=None, team_id="T5") is None


async def test_revoked_bot_leaves_the_user_token(store: DatabaseInstallationStore) -> None:
    await store.async_save(_installation())
    await store.async_delete_bot(enterprise_id="E1", team_id="T1")
    assert await store.async_find_bot(enterprise_id="E1", team_id="T1") is None
    found = await store.async_find_installation(enterprise_id="E1", team_id="T1")
    assert found is not None
    assert (found.bot_token, found.bot_refresh_token, found.user_token) == (None, None, "xoxp-1-user")


async def test_revoked_bot_without_a_user_token_leaves_nothing(
    store: DatabaseInstallationStore, repo: SlackInstallRepo
) -> None:
    await store.async_save(_installation(user_token=None, user_scopes="", user_refresh_token=None))
    await store.async_delete_bot(enterprise_id="E1", team_id="T1")
    assert await repo.find(CLIENT, "E1", "T1") is None


async def test_deleted_installation_leaves_its_bot(store: DatabaseInstallationStore) -> None:
    await store.async_save(_installation())
    await store.async_delete_installation(enterprise_id="E1", team_id="T1", user_id="U2")
    assert await store.async_find_installation(enterprise_id="E1", team_id="T1") is not None

    await store.async_delete_installation(enterprise_id="E1", team_id="T1", user_id="U1")
    assert await store.async_find_installation(enterprise_id="E1", team_id="T1") is None
    bot = await store.async_find_bot(enterprise_id="E1", team_id="T1")
    assert bot is not None
    assert (bot.bot_token, bot.bot_refresh_token) == ("xoxe.xoxb-1-abc", "xoxe-1-bot-refresh")


async def test_oauth_state_is_good_once(repo: SlackInstallRepo, clock: FakeClock) -> None:
    states = DatabaseOAuthStateStore(repo, expiration_seconds=600, clock=clock)
    first, second = await states.async_issue(), await states.async_issue()
    assert first != second
    assert len(first) >= 43
    clock.advance(599)
    assert await states.async_consume(first) is True
    assert await states.async_consume(first) is False
    assert await states.async_consume("forged") is False
    clock.advance(1)
    assert await states.async_consume(second) is False


class _Ticks:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_bolts_lookup_on_every_event_reads_the_installation_once_a_while(
    repo: SlackInstallRepo, db: Database
) -> None:
    ticks = _Ticks()
    store = DatabaseInstallationStore(repo, CLIENT, clock=ticks)
    await store.async_save(_installation())
    with count_statements(db) as statements:
        for _ in range(20):  # twenty events from one workspace, each authorized by bolt
            assert await store.async_find_bot(enterprise_id="E1", team_id="T1") is not None
    assert len(statements) == 1
    await store.async_save(_installation(bot_token="xoxe.xoxb-2-new"))  # a reinstall here is seen at once
    bot = await store.async_find_bot(enterprise_id="E1", team_id="T1")
    assert bot is not None
    assert bot.bot_token == "xoxe.xoxb-2-new"
    await repo.delete(CLIENT, "E1", "T1")  # another instance's uninstall, behind this store's back
    ticks.now += INSTALL_CACHE_SECONDS
    assert await store.async_find_bot(enterprise_id="E1", team_id="T1") is None
