"""The soak's admin: a page served by the bench and scheduled once, `/sync` every minute, a small upload every few.

The admin works in the web chat, in a conversation bound to a knowledge base of its own (PAGES_KB) that no other
chat reads, so the people's answers keep their one source. The page answers conditional requests (ETag, 304) as
a well-behaved server does and changes now and then, so a sync is sometimes "not modified" and sometimes a
re-index.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from adapters.web.guard import REQUEST_HEADER, UPLOAD_PATH
from bench.soak_web import open_browser

PAGES_KB = "pages"
_TOPICS = ("parking", "cafeteria", "badges", "printers", "lockers", "bicycles", "mail room", "meeting rooms")


@dataclass
class Page:
    """The scheduled page: its version (its body and ETag follow it), and the requests it answered."""

    url: str = ""
    version: int = 1
    fetched: int = 0
    not_modified: int = 0

    @property
    def etag(self) -> str:
        """The ETag of this version."""
        return f'"v{self.version}"'

    def body(self) -> str:
        """This version's Markdown: a short notice whose figures change with the version."""
        return (
            f"# Visitor parking\n\nVisitors park on level {self.version % 5 + 1} of the north garage. "
            f"The barrier code this week is {1000 + self.version * 37 % 9000}. Revision {self.version}.\n"
        )

    def change(self) -> None:
        """A new version: the next fetch gets a new body and ETag."""
        self.version += 1

    async def handle(self, request: web.Request) -> web.Response:
        """GET: 304 when the client has this version, else the page."""
        self.fetched += 1
        if request.headers.get("If-None-Match") == self.etag:
            self.not_modified += 1
            return web.Response(status=304, headers={"ETag": self.etag})
        return web.Response(text=self.body(), content_type="text/markdown", headers={"ETag": self.etag})


@asynccontextmanager
async def page_server() -> AsyncIterator[Page]:
    """The page on a free loopback port (URL_FETCH_ALLOWED_NETWORKS must allow 127.0.0.0/8)."""
    page = Page()
    app = web.Application()
    app.router.add_get("/notices/parking.md", page.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    page.url = f"http://127.0.0.1:{runner.addresses[0][1]}/notices/parking.md"
    try:
        yield page
    finally:
        await runner.cleanup()


def note(number: int) -> bytes:
    """A small document of its own: a few paragraphs on an office topic, numbered so no two are the same."""
    topic = _TOPICS[number % len(_TOPICS)]
    paragraphs = [
        f"# Office note {number}: {topic}\n",
        f"This note {number} says how the {topic} work from week {number}. Ask the front desk for help.",
        f"The {topic} are checked every morning; report a problem with reference N-{number:05d}.",
        f"Note {number} replaces earlier notes on the {topic}.",
    ]
    return "\n\n".join(paragraphs).encode()


@dataclass(frozen=True, slots=True)
class AdminAction:
    """One command the admin sent: what, when (monotonic), how long its reply took, and what it finally said."""

    kind: str
    at: float
    seconds: float
    said: str


@dataclass
class Admin:
    """The admin's browser on the web chat: logged in, bound to PAGES_KB, and its actions so far."""

    url: str
    access_token: str
    admin_token: str
    timeout: float
    # Shared by the admins of every phase, so the report has them all.
    actions: list[AdminAction] = field(default_factory=list)
    _browser: aiohttp.ClientSession | None = None
    _connector: aiohttp.TCPConnector = field(default_factory=aiohttp.TCPConnector)

    async def open(self) -> None:
        """Open the chat, log in as admin, and bind this conversation to PAGES_KB."""
        limit = aiohttp.ClientTimeout(total=self.timeout)
        self._browser = await open_browser(self.url, self.access_token, self._connector, limit)
        async with self._browser.post(
            f"{self.url}/api/admin/login", json={"token": self.admin_token}, headers={"Origin": self.url}
        ) as response:
            response.raise_for_status()
        await self.command("setup", f"/kb use {PAGES_KB}")

    async def command(self, kind: str, text: str) -> str:
        """Send a command and read its reply to the end: the last text of each message, joined."""
        assert self._browser is not None
        started = time.monotonic()
        post = self._browser.post(f"{self.url}/api/messages", json={"text": text}, headers={"Origin": self.url})
        async with post as response:
            said = await _replies(response)
        self.actions.append(AdminAction(kind, started, time.monotonic() - started, said))
        return said

    async def upload(self, name: str, data: bytes) -> str:
        """Upload one file with `/ingest`, as the page's paperclip does, and read the job's reply to the end."""
        assert self._browser is not None
        form = aiohttp.FormData()
        form.add_field("text", "/ingest")
        form.add_field("file", data, filename=name, content_type="text/markdown")
        headers = {"Origin": self.url, REQUEST_HEADER: "1"}
        started = time.monotonic()
        async with self._browser.post(f"{self.url}{UPLOAD_PATH}", data=form, headers=headers) as response:
            said = await _replies(response)
        self.actions.append(AdminAction("upload", started, time.monotonic() - started, said))
        return said

    async def work(self, page: Page, rng: random.Random, every: tuple[float, float], change: float) -> None:
        """Until cancelled: `/sync` every every[0] s (the page changed first with chance `change`), and a new note
        uploaded every every[1] s; one command at a time, as one admin types them."""
        sync_every, upload_every = every
        next_sync, next_upload = time.monotonic() + sync_every, time.monotonic() + upload_every
        uploads = len([action for action in self.actions if action.kind == "upload"])
        while True:
            await asyncio.sleep(max(0.0, min(next_sync, next_upload) - time.monotonic()))
            if next_upload <= next_sync:
                uploads += 1
                await self._guarded("upload", self.upload(f"note-{uploads}.md", note(uploads)))
                next_upload += upload_every
            else:
                if rng.random() < change:
                    page.change()
                await self._guarded("sync", self.command("sync", "/sync"))
                next_sync += sync_every

    async def _guarded(self, kind: str, action: Coroutine[Any, Any, str]) -> None:
        """Run one action; a failed one is recorded, and the admin goes on."""
        started = time.monotonic()
        try:
            await action
        except (aiohttp.ClientError, TimeoutError) as exc:
            self.actions.append(AdminAction(kind, started, time.monotonic() - started, f"failed: {exc!r}"[:160]))

    async def close(self) -> None:
        """Close the browser."""
        if self._browser is not None:
            await self._browser.close()
        await self._connector.close()


async def _replies(response: aiohttp.ClientResponse) -> str:
    """The server-sent events of a command's reply: each message's last text (sends and edits by ref), joined."""
    response.raise_for_status()
    texts: dict[str, str] = {}
    event = ""
    async for raw in response.content:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            event = line.removeprefix("event: ")
        elif line.startswith("data: ") and event in ("message", "edit", "final", "error"):
            data = json.loads(line.removeprefix("data: "))
            texts[str(data.get("ref", event))] = str(data.get("text", ""))
    return " | ".join(" ".join(text.split()) for text in texts.values())
