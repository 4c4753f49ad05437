"""Exposure drills: ragbot behind a proxy on loopback is public; forwarding headers count from trusted proxies only."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from bot.app.exposure import exposure_of
from bot.app.preflight import check_platforms
from bot.app.proxies import forwarded_client
from bot.app.settings import Settings
from bot.errors import StartupError
from bot.settings_base import networks
from bot.words import messages
from harness.processes import ROOT, SETTINGS_PREFIXES, free_port, ragbot, wait_until_ready
from storage.weaviate.server import WeaviateServer
from tests.conftest import EmbeddedSettings, weaviate_urls
from tests.security.web_support import ACCESS_TOKEN, ADMIN_TOKEN, Served, login, opened, serve, settings_in

PUBLIC_BY = [
    pytest.param({"RAGBOT_PUBLIC": "true"}, "RAGBOT_PUBLIC=true", id="declared"),
    pytest.param({"RAGBOT_TRUSTED_PROXIES": "127.0.0.1"}, "RAGBOT_TRUSTED_PROXIES", id="trusted-proxy"),
    pytest.param(
        {
            "TELEGRAM_BOT_TOKEN": "123:abc",
            "TELEGRAM_MODE": "webhook",
            "TELEGRAM_WEBHOOK_URL": "https://bot.example.com/telegram/webhook",
            "TELEGRAM_WEBHOOK_SECRET": "s3cret",
        },
        "TELEGRAM_MODE=webhook",
        id="telegram-webhook",
    ),
    pytest.param(
        {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s"},
        "SLACK_BOT_TOKEN without SLACK_APP_TOKEN",
        id="slack-events-over-http",
    ),
    pytest.param(
        {"SLACK_CLIENT_ID": "1.2", "SLACK_CLIENT_SECRET": "c", "SLACK_SIGNING_SECRET": "s"},
        "SLACK_CLIENT_ID",
        id="slack-install-pages",
    ),
]


@pytest.mark.parametrize(("more", "reason"), PUBLIC_BY)
def test_a_loopback_ragbot_behind_a_proxy_does_not_serve_the_chat_without_an_access_token(
    tmp_path: Path, more: dict[str, Any], reason: str
) -> None:
    settings = Settings(_env_file=None, RAGBOT_DATA_DIR=tmp_path, RAGBOT_HOST="127.0.0.1", **more)
    assert (exposure_of(settings).public, exposure_of(settings).reason) == (True, reason)
    with pytest.raises(StartupError) as caught:
        check_platforms(settings, serving=True)
    assert caught.value.setting == "WEB_ACCESS_TOKEN"
    assert reason in caught.value.problem
    check_platforms(settings.model_copy(update={"WEB_ACCESS_TOKEN": ACCESS_TOKEN}), serving=True)


def test_a_loopback_ragbot_on_polling_and_socket_mode_stays_local(tmp_path: Path) -> None:
    settings = Settings(
        _env_file=None,
        RAGBOT_DATA_DIR=tmp_path,
        TELEGRAM_BOT_TOKEN="123:abc",
        SLACK_BOT_TOKEN="xoxb-1",
        SLACK_APP_TOKEN="xapp-1",
    )
    assert not exposure_of(settings).public
    check_platforms(settings, serving=True)


@pytest_asyncio.fixture(scope="module")
async def local(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[Served]:
    async with serve(settings_in(embedded_settings, tmp_path_factory.mktemp("local"))) as served:
        yield served


@pytest.mark.parametrize("path", ["/", "/api/history", "/api/session", "/metrics", "/healthz"])
@pytest.mark.parametrize("header", ["X-Forwarded-For", "Forwarded", "X-Real-IP", "X-Forwarded-Proto"])
async def test_a_request_through_a_proxy_to_a_local_ragbot_is_refused(local: Served, path: str, header: str) -> None:
    async with aiohttp.ClientSession(local.url) as client:
        async with client.get(path) as response:
            assert response.status == 200
        async with client.get(
            path, headers={header: "for=198.51.100.1" if header == "Forwarded" else "https"}
        ) as refused:
            assert (refused.status, (await refused.json())["error"]) == (403, messages.SERVED_LOCALLY)


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8080", "10.0.0.5", "127.0.0.1.nip.io"])
async def test_a_dns_rebinding_host_is_refused_by_a_local_ragbot(local: Served, host: str) -> None:
    # A page on attacker.example whose name now resolves to 127.0.0.1: same origin to the browser, not to ragbot.
    async with (
        aiohttp.ClientSession(local.url) as client,
        client.get("/api/history", headers={"Host": host}) as response,
    ):
        assert response.status == 403


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]:8080", "chat.localhost:8080"])
async def test_this_machines_own_names_are_served_locally(local: Served, host: str) -> None:
    async with aiohttp.ClientSession(local.url) as client, client.get("/readyz", headers={"Host": host}) as response:
        assert response.status == 200


@pytest_asyncio.fixture(scope="module")
async def untrusting(
    tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings
) -> AsyncIterator[Served]:
    settings = settings_in(embedded_settings, tmp_path_factory.mktemp("public"), WEB_ACCESS_TOKEN=ACCESS_TOKEN)
    async with serve(settings, public=True) as served:
        yield served


async def test_a_forged_x_forwarded_for_from_an_untrusted_peer_does_not_escape_the_lock_out(
    untrusting: Served,
) -> None:
    for attempt in range(5):
        async with untrusting.browser(**{"X-Forwarded-For": f"198.51.100.{attempt}"}) as guesser:
            await opened(guesser, ACCESS_TOKEN)
            assert (await login(guesser, f"guess-{attempt}"))[0] == 403
    async with untrusting.browser(**{"X-Forwarded-For": "198.51.100.99"}) as guesser:
        await opened(guesser, ACCESS_TOKEN)
        assert (await login(guesser, ADMIN_TOKEN))[0] == 429, "every guess came from one peer, whatever it claimed"


async def test_a_public_listener_needs_the_access_link_and_shows_no_metrics(untrusting: Served) -> None:
    async with untrusting.browser() as stranger:
        async with stranger.get("/api/history") as response:
            assert response.status == 403
        async with stranger.get("/metrics") as response:
            assert response.status == 404
        async with stranger.get("/healthz") as response:
            assert await response.json() == {"status": "ok"}


@pytest.mark.parametrize(
    ("chain", "peer", "client"),
    [
        ("203.0.113.7", "10.0.0.2", "203.0.113.7"),
        ("6.6.6.6, 203.0.113.7", "10.0.0.2", "203.0.113.7"),  # the left part is the client's own claim
        ("203.0.113.7, 10.0.0.9", "10.0.0.2", "203.0.113.7"),  # through two trusted proxies
        ("", "10.0.0.2", "10.0.0.2"),
        ("not-an-address", "10.0.0.2", "10.0.0.2"),
        ("203.0.113.7, junk, 10.0.0.9", "10.0.0.2", "10.0.0.9"),
    ],
)
def test_the_client_is_the_nearest_hop_the_trusted_proxies_did_not_add(chain: str, peer: str, client: str) -> None:
    assert forwarded_client(chain, peer, networks("10.0.0.0/8")) == client


@pytest.fixture
def public_env(
    tmp_path: Path, weaviate_server: WeaviateServer, model_dir: Path, tiktoken_dir: Path | None
) -> dict[str, str]:
    import os

    env = {key: value for key, value in os.environ.items() if not key.startswith(SETTINGS_PREFIXES)}
    env.update(
        RAGBOT_DATA_DIR=str(tmp_path / "data"),
        RAGBOT_PORT=str(free_port()),
        RAGBOT_INTERNAL_PORT=str(free_port()),
        EMBEDDING_MODEL_DIR=str(model_dir),
        PYTHONPATH=str(ROOT),
        RAGBOT_PUBLIC="true",
        WEB_ACCESS_TOKEN=ACCESS_TOKEN,
        **weaviate_urls(weaviate_server),
    )
    if tiktoken_dir is not None:
        env["TIKTOKEN_CACHE_DIR"] = str(tiktoken_dir)
    return env


async def test_ragbot_serve_declared_public_on_loopback_keeps_metrics_and_details_on_the_internal_port(
    public_env: dict[str, str], tmp_path: Path
) -> None:
    public = f"http://127.0.0.1:{public_env['RAGBOT_PORT']}"
    internal = f"http://127.0.0.1:{public_env['RAGBOT_INTERNAL_PORT']}"
    process = await ragbot(public_env, tmp_path, "serve")
    try:
        await wait_until_ready(public, process)
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{public}/metrics") as response:
                assert response.status == 404
            async with http.get(f"{public}/healthz") as response:
                assert await response.json() == {"status": "ok"}
            async with http.get(f"{public}/api/history") as response:
                assert response.status == 403, "the chat asks for the access link"
            async with http.get(f"{internal}/metrics") as response:
                assert response.status == 200
            async with http.get(f"{internal}/healthz") as response:
                assert "weaviate" in await response.json()
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), 60)
    log = stderr.decode()
    assert "serve=public reason=RAGBOT_PUBLIC=true" in log
    assert "RAGBOT_TRUSTED_PROXIES=127.0.0.1" in log, "the log says what the proxy in front needs"
