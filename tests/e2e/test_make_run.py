"""The README's first command as a newcomer runs it: `make run` in a fresh checkout, one question, then stop.

The checkout is the repository's tracked files copied into a temporary folder, as `git clone` would lay them
(an untracked file the product needs fails here as it would for a newcomer). Only the slow installs are
reused: the virtualenv and the Weaviate binary are symlinked in, and PYTHONPATH puts the checkout's own code
first, since the virtualenv's editable install points at this repository.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from harness.processes import ROOT, SETTINGS_PREFIXES, free_port

# Building the demo knowledge base starts Weaviate twice and embeds the README; on 2 busy cores that is slow.
_START_SECONDS = 300


def _fresh_checkout(target: Path) -> Path:
    """Copy the tracked files of this repository into `target`, as a clone would have them."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    for name in listed.decode().split("\0"):
        source = ROOT / name
        if name and source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def _require_current_install() -> None:
    """Fail unless the virtualenv holds what pyproject.toml asks for: else `make run` in the checkout would
    reinstall the shared virtualenv from the temporary checkout."""
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + (ROOT / "constraints.txt").read_bytes())
    stamp = ROOT / ".venv" / ".installed"
    installed = stamp.read_text().strip() if stamp.is_file() else ""
    if not installed.startswith(wanted.hexdigest()):
        pytest.fail("the virtualenv is older than pyproject.toml or constraints.txt: run `make install` first")


@pytest_asyncio.fixture
async def newcomer(
    tmp_path: Path, weaviate_binary: Path, model_dir: Path, tiktoken_dir: Path | None
) -> AsyncIterator[tuple[Path, dict[str, str]]]:
    """A fresh checkout with the installs linked in, and the environment of someone who configured nothing."""
    _require_current_install()
    checkout = _fresh_checkout(tmp_path / "ragbot")
    (checkout / ".venv").symlink_to(ROOT / ".venv")
    (checkout / "bin").mkdir()
    (checkout / "bin" / "weaviate-server").symlink_to(weaviate_binary)
    env = {key: value for key, value in os.environ.items() if not key.startswith(SETTINGS_PREFIXES)}
    # What the Makefile sets itself for a checkout beside ../shared; this one sits elsewhere.
    env.update(RAGBOT_PORT=str(free_port()), EMBEDDING_MODEL_DIR=str(model_dir), PYTHONPATH=str(checkout))
    env.pop("MAKEFLAGS", None)
    if tiktoken_dir is not None:
        env["TIKTOKEN_CACHE_DIR"] = str(tiktoken_dir)
    yield checkout, env


async def _healthy(url: str, make: asyncio.subprocess.Process, output: Path) -> dict[str, Any]:
    """Poll /healthz until it answers 200; fail with make's output if make ends first."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
        for _ in range(_START_SECONDS * 4):
            if make.returncode is not None:
                ended = f"make run ended with {make.returncode} before /healthz answered"
                raise AssertionError(f"{ended}:\n{output.read_text()}")
            try:
                async with http.get(f"{url}/healthz") as response:
                    if response.status == 200:
                        health: dict[str, Any] = await response.json()
                        return health
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.25)
    raise AssertionError(f"/healthz did not answer within {_START_SECONDS}s:\n{output.read_text()}")


async def _ask(url: str, question: str) -> dict[str, Any]:
    """Ask in the web chat as the page does; the final event's data."""
    # The page's fetch sends its Origin: ragbot refuses state-changing requests from any other.
    async with aiohttp.ClientSession(
        url, cookie_jar=aiohttp.CookieJar(unsafe=True), headers={"Origin": url}
    ) as browser:
        async with browser.get("/") as page:
            assert page.status == 200
        async with browser.post("/api/messages", json={"text": question}) as response:
            assert response.status == 200, await response.text()
            body = await response.text()
    events = [block.split("\n", 1) for block in body.split("\n\n") if block.strip()]
    finals = [json.loads(data.removeprefix("data: ")) for name, data in events if name == "event: final"]
    assert len(finals) == 1, body
    final: dict[str, Any] = finals[0]
    return final


def _serving_child(make: asyncio.subprocess.Process) -> int:
    """The pid of `ragbot serve`: make's recipe execs it, so it is make's only child."""
    children = Path(f"/proc/{make.pid}/task/{make.pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


async def test_make_run_on_a_fresh_checkout_answers_from_the_demo_and_stops_cleanly(
    newcomer: tuple[Path, dict[str, str]],
) -> None:
    checkout, env = newcomer
    url = f"http://127.0.0.1:{env['RAGBOT_PORT']}"
    output = checkout.parent / "make-run.log"
    with output.open("wb") as sink:
        make = await asyncio.create_subprocess_exec("make", "run", cwd=checkout, env=env, stdout=sink, stderr=sink)
    try:
        health = await _healthy(url, make, output)
        assert {part["status"] for name, part in health.items() if name != "model"} == {"ok"}, health
        final = await _ask(url, "How do I ingest a folder?")
        assert final["outcome"] == "extractive", final
        assert "README.md" in [source["title"] for source in final["sources"]], final
        os.kill(_serving_child(make), signal.SIGTERM)
        await asyncio.wait_for(make.wait(), 60)
    finally:
        if make.returncode is None:
            make.kill()
            await make.wait()
    log = output.read_text()
    assert make.returncode == 0, log
    assert "skipped" in log, "the demo skips the README's screenshot with one line"
    assert "web-chat.png: an image in a folder is taken for an illustration" in log
    assert "serve=stopping" in log
