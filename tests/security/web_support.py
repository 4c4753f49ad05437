"""What the web chat's security drills share: ragbot's real HTTP app on a real port, browsers, raw requests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from adapters.web.app import WebChat, WebConfig
from adapters.web.session import SessionSigner, SharedRevocations, load_key
from adapters.web.settings import WebSettings
from bot.app.manager import build_manager, chat_policy
from bot.app.platforms import load_adapters
from bot.app.server import create_app
from bot.app.services import Services, build_services
from bot.app.settings import Settings
from bot.chat.limits import RateLimit
from bot.metrics import ChatMetrics
from bot.settings_base import Network
from harness.processes import free_port
from storage.repos.leases import LeaseRepo

# Long enough for the 32-character minimum; the drills' own, never a deployment's.
ADMIN_TOKEN = "drill-admin-token-0123456789abcdefghij"
ACCESS_TOKEN = "drill-access-token-0123456789abcdefghi"
PAGE_HEADERS = {"Content-Type": "application/json"}


@dataclass
class Clock:
    """Wall time the drills move forward (cookies' issue times cross restarts, so they are wall time)."""

    now: float = field(default_factory=time.time)

    def __call__(self) -> float:
        return self.now


@dataclass
class Served:
    """ragbot's app on a loopback port: its services, its URL and the web chat's clock."""

    services: Services
    url: str
    port: int
    clock: Clock
    access_token: str | None = None

    def browser(self, **headers: str) -> aiohttp.ClientSession:
        """A browser on the chat page: its own cookies, and the Origin a page's fetch sends."""
        return aiohttp.ClientSession(
            self.url, cookie_jar=aiohttp.CookieJar(unsafe=True), headers={"Origin": self.url, **headers}
        )


@asynccontextmanager
async def serve(
    settings: Settings,
    *,
    public: bool = False,
    trusted_proxies: tuple[Network, ...] = (),
    platforms: bool = False,
) -> AsyncIterator[Served]:
    """ragbot's HTTP app with the web chat (its signer on a clock the test moves) and, with `platforms`, every
    other adapter the settings turn on, mounted as `ragbot serve` mounts them."""
    clock = Clock()
    async with build_services(settings) as services:
        manager = build_manager(services, chat_policy(settings), metrics=ChatMetrics())
        app = create_app(services, public=public, trusted_proxies=trusted_proxies)
        web_settings = WebSettings.of(settings)

        async def signer() -> SessionSigner:
            return SessionSigner(await load_key(services.db, settings.data_dir), clock)

        chat = WebChat(
            manager,
            WebConfig(
                admin_token=ADMIN_TOKEN,
                access_token=chat_access_token(settings),
                upload_limit=settings.ingestion_limits().max_file_bytes,
                address_rate_limit=RateLimit(count=web_settings.WEB_ADDRESS_RATE_LIMIT, window=60.0),
            ),
            signer,
            SharedRevocations(LeaseRepo(services.db)),
        )
        chat.mount(app)
        others = [a for a in load_adapters(manager, settings, services.db) if a.name != "web"] if platforms else []
        for adapter in others:
            adapter.mount(app)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        await services.jobs.start()
        try:
            yield Served(services, f"http://127.0.0.1:{port}", port, clock, chat_access_token(settings))
        finally:
            await services.jobs.stop()
            await chat.stop()
            await runner.cleanup()


def chat_access_token(settings: Settings) -> str | None:
    """WEB_ACCESS_TOKEN, if set."""
    token = WebSettings.of(settings).WEB_ACCESS_TOKEN
    return token.get_secret_value() if token else None


async def opened(browser: aiohttp.ClientSession, access_token: str | None = None) -> aiohttp.ClientSession:
    """The browser after loading the page, through the access link when there is one (it holds a session cookie)."""
    async with browser.get(f"/?access={access_token}" if access_token else "/") as page:
        assert page.status == 200, await page.text()
    return browser


async def login(browser: aiohttp.ClientSession, token: str = ADMIN_TOKEN) -> tuple[int, Any]:
    """Enter an admin token as the page does: the status and JSON body."""
    async with browser.post("/api/admin/login", json={"token": token}) as response:
        return response.status, await response.json()


def plant(browser: aiohttp.ClientSession, cookies: dict[str, str]) -> None:
    """Put cookies in the browser's jar for ragbot's own host, replacing any of the same names."""
    assert browser._base_url is not None
    browser.cookie_jar.update_cookies(cookies, response_url=browser._base_url)


def cookie(browser: aiohttp.ClientSession, name: str) -> str | None:
    """A cookie's value in the browser's jar."""
    return next((c.value for c in browser.cookie_jar if c.key == name), None)


_ANSWER_WITHIN = 5.0  # seconds: a refusal is immediate; a server waiting for the body never answers


async def raw_request(port: int, head: str) -> tuple[int, bytes]:
    """Send a request head (and no body) on a bare socket: the status and response as soon as the server answers,
    or (0, b"") when it waits for the body instead."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head.replace("\n", "\r\n").encode() + b"\r\n")
        await writer.drain()
        try:
            status_line = await asyncio.wait_for(reader.readline(), _ANSWER_WITHIN)
        except TimeoutError:
            return 0, b""
        rest = await asyncio.wait_for(reader.read(65536), _ANSWER_WITHIN)
        return int(status_line.split()[1]), rest
    finally:
        writer.close()


def settings_in(embedded_settings: Callable[..., Settings], data_dir: Path, **more: Any) -> Settings:
    """The embedded settings with the drills' admin token and a default knowledge base."""
    return embedded_settings(data_dir, WEB_ADMIN_TOKEN=ADMIN_TOKEN, DEFAULT_KNOWLEDGE_BASES="docs", **more)
