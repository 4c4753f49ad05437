"""The web page's renderer in a real browser (Debian's chromium, driven by playwright), and what it costs.

The cost of a render is counted, never timed: V8's precise block coverage says how many times each block of
markdown.js ran, wrappers on the page's string search and URL parser count the characters handed to them
(work done in native code, which coverage does not see). A renderer that reads the text again for every
delimiter shows it in these counts whatever the machine's speed.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from playwright.async_api import Browser, CDPSession, Page, async_playwright

from adapters.web.app import STATIC_DIR
from fakes.openai_api import FakeOpenAI
from harness.processes import free_port

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
RENDERER_URL = "/static/markdown.js"

# A page with only the web chat's renderer on it, and an element to render into.
RENDERER_PAGE = f'<!doctype html><meta charset="utf-8"><div id="out"></div><script src="{RENDERER_URL}"></script>'

# Counts, in the page, the characters its string searches and its URL parser are handed. Searches in strings of
# a few hundred characters at most (the renderer's own character tables) are not reading the text.
WORK_PROBE = """
(() => {
  const work = (window.__work = { searched: 0, parsed: 0 });
  const LONG = 256;
  for (const name of ["indexOf", "lastIndexOf", "includes"]) {
    const native = String.prototype[name];
    String.prototype[name] = function (needle, from) {
      const result = native.apply(this, arguments);
      const length = String(this).length;
      if (length > LONG) {
        const start = Math.min(length, Math.max(0, from | 0));
        const at = name === "includes" ? (result ? native.call(this, needle, from) : -1) : result;
        work.searched += name === "lastIndexOf" || at === -1 ? length - start : at - start + String(needle).length;
      }
      return result;
    };
  }
  window.URL = new Proxy(window.URL, {
    construct(target, args) {
      work.parsed += String(args[0]).length;
      return Reflect.construct(target, args);
    },
  });
})();
"""

# What a rendered element may hold: the renderer's own tags and attributes, links only to http(s) and mailto.
INERT_CHECK = """
(element) => {
  const tags = new Set(["P", "BR", "STRONG", "EM", "DEL", "CODE", "PRE", "A", "UL", "OL", "LI", "BLOCKQUOTE",
                        "H3", "H4", "H5", "H6", "HR", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD"]);
  const attributes = { A: ["href", "rel", "target"], CODE: ["data-language"], OL: ["start"], TH: ["align"],
                       TD: ["align"] };
  const wrong = [];
  for (const node of element.querySelectorAll("*")) {
    if (!tags.has(node.tagName)) wrong.push("element " + node.tagName);
    for (const attribute of node.attributes) {
      if (!(attributes[node.tagName] || []).includes(attribute.name)) wrong.push(node.tagName + " @" + attribute.name);
    }
    if (node.tagName === "A") {
      if (!["http:", "https:", "mailto:"].includes(node.protocol)) wrong.push("link to " + node.href);
      if (node.rel !== "noopener noreferrer") wrong.push("link rel " + node.rel);
    }
  }
  return wrong;
}
"""


# Counts, per element, the page's renders into it (whatever renderer the page loads: it is wrapped as it is
# defined), and keeps every character the page decoded from the network, to know what it has received.
RENDER_PROBE = """
(() => {
  let renderer;
  Object.defineProperty(window, "RagbotMarkdown", {
    configurable: true,
    get() {
      return renderer;
    },
    set(value) {
      const renderInto = value.renderInto;
      value.renderInto = function (element) {
        element.__renders = (element.__renders || 0) + 1;
        return renderInto.apply(this, arguments);
      };
      renderer = value;
    },
  });
  window.__received = "";
  const decode = TextDecoder.prototype.decode;
  TextDecoder.prototype.decode = function () {
    const text = decode.apply(this, arguments);
    window.__received += text;
    return text;
  };
})();
"""

# Counts the animation frames the page gets from now on.
FRAME_COUNTER = """
() => {
  window.__frames = 0;
  requestAnimationFrame(function tick() {
    window.__frames++;
    requestAnimationFrame(tick);
  });
}
"""


class BurstModel(FakeOpenAI):
    """FakeOpenAI streaming its answer a word per delta, in bursts: each burst after the first waits for `release`.

    A request that is not streamed (the query rewriter's) gets the fake's plain `reply`.
    """

    def __init__(self) -> None:
        super().__init__()
        self._bursts: list[str] = []
        self._gates: list[asyncio.Event] = []

    def script(self, bursts: list[str]) -> None:
        """The next streamed answer, in these bursts; the first goes out at once."""
        self._bursts = bursts
        self._gates = [asyncio.Event() for _ in bursts]
        self._gates[0].set()

    def release(self, burst: int) -> None:
        """Let burst number `burst` (from 0) go out."""
        self._gates[burst].set()

    def release_all(self) -> None:
        """Let every burst go out (so a test that failed midway leaves no answer waiting)."""
        for gate in self._gates:
            gate.set()

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if not body.get("stream"):
            return await super()._chat(request)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        head = {"id": "chatcmpl-bursts", "created": int(time.time()), "model": body.get("model", "")}

        async def send(delta: dict[str, str], finish_reason: str | None = None) -> None:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            chunk = {**head, "object": "chat.completion.chunk", "choices": [choice]}
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

        await send({"role": "assistant", "content": ""})
        for gate, burst in zip(self._gates, self._bursts, strict=True):
            await asyncio.wait_for(gate.wait(), 60)
            for piece in re.split(r"(?<=\s)(?=\S)", burst):
                await send({"content": piece})
        await send({}, finish_reason="stop")
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


@dataclass(frozen=True, slots=True)
class Work:
    """What one render cost: blocks of markdown.js run, characters searched and characters URL-parsed."""

    blocks: int
    searched: int
    parsed: int

    @property
    def total(self) -> int:
        """All three counts together."""
        return self.blocks + self.searched + self.parsed


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """Debian's chromium driven by playwright (never playwright's own download)."""
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"chromium is missing at {CHROMIUM}: install Debian's chromium package")
    async with async_playwright() as playwright:
        # Chromium's sandbox refuses to run as root (as in CI containers).
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        try:
            yield browser
        finally:
            await browser.close()


async def _renderer_page(request: web.Request) -> web.Response:
    return web.Response(text=RENDERER_PAGE, content_type="text/html")


@asynccontextmanager
async def renderer_site() -> AsyncIterator[str]:
    """An aiohttp server with the web chat's static files and a page holding only its renderer; its URL."""
    app = web.Application()
    app.router.add_get("/", _renderer_page)
    app.router.add_static("/static/", STATIC_DIR, append_version=False)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


class RendererPage:
    """A tab on the renderer page, with coverage on from before the renderer loads."""

    def __init__(self, page: Page, cdp: CDPSession) -> None:
        self.page = page
        self._cdp = cdp

    @classmethod
    async def open(cls, browser: Browser, url: str) -> RendererPage:
        """Open the renderer page at `url` in a fresh context."""
        context = await browser.new_context()
        await context.add_init_script(WORK_PROBE)
        page = await context.new_page()
        cdp = await context.new_cdp_session(page)
        await cdp.send("Profiler.enable")
        await cdp.send("Profiler.startPreciseCoverage", {"callCount": True, "detailed": True})
        await page.goto(url)
        await page.wait_for_function("() => window.RagbotMarkdown !== undefined")
        return cls(page, cdp)

    async def close(self) -> None:
        """Close the tab's context."""
        await self.page.context.close()

    async def render(self, text: str) -> Work:
        """Render `text` into the page's element; what it cost."""
        await self._cdp.send("Profiler.takePreciseCoverage")  # taking the counts resets them
        counted: dict[str, int] = await self.page.evaluate(
            """text => {
              window.__work.searched = 0;
              window.__work.parsed = 0;
              RagbotMarkdown.renderInto(document.getElementById("out"), text);
              return { searched: window.__work.searched, parsed: window.__work.parsed };
            }""",
            text,
        )
        coverage = await self._cdp.send("Profiler.takePreciseCoverage")
        return Work(_blocks(coverage, RENDERER_URL), counted["searched"], counted["parsed"])

    async def render_html(self, text: str) -> str:
        """Render `text` into the page's element; its HTML."""
        html: str = await self.page.evaluate(
            """text => {
              const out = document.getElementById("out");
              RagbotMarkdown.renderInto(out, text);
              return out.innerHTML;
            }""",
            text,
        )
        return html

    async def uninert(self, texts: list[str]) -> dict[str, list[str]]:
        """Render each text into the page's element: for each whose result holds anything but the renderer's own
        inert markup, what that is."""
        wrong: dict[str, list[str]] = await self.page.evaluate(
            f"""texts => {{
              const out = document.getElementById("out");
              const check = {INERT_CHECK};
              const wrong = {{}};
              for (const text of texts) {{
                RagbotMarkdown.renderInto(out, text);
                const found = check(out);
                if (found.length) wrong[text] = found;
              }}
              return wrong;
            }}""",
            texts,
        )
        return wrong


def _blocks(coverage: dict[str, Any], url: str) -> int:
    """How many times blocks of the script at `url` ran, summed over every range V8 reported."""
    return sum(
        block["count"]
        for script in coverage["result"]
        if script["url"].endswith(url)
        for function in script["functions"]
        for block in function["ranges"]
    )
