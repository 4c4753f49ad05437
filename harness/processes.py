"""The `ragbot` command as a subprocess: a free port, the settings to keep out of its environment, start, ready."""

from __future__ import annotations

import asyncio
import random
import socket
import sys
from pathlib import Path
from typing import Final

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
# The names ragbot's settings read, by prefix: a child process gets none of them from the shell that runs it.
SETTINGS_PREFIXES = (
    "RAGBOT_",
    "DATABASE_",
    "WEAVIATE_",
    "EMBEDDING_",
    "CHAT_",
    "WEB_",
    "DEFAULT_KNOWLEDGE_BASES",
    "LOG_LEVEL",
    "TOKEN_",
    "URL_FETCH_",
    "INGEST_",
    "JIEBA_",
    "RETRIEVAL_",
    "QUERY_",
    "HISTORY_",
    "FAQ_",
    "RERANK_",
    "ANSWER_",
)


async def stop_process(process: asyncio.subprocess.Process, grace: float) -> None:
    """Stop a child process: SIGTERM, then SIGKILL once `grace` seconds pass without its exit."""
    if process.returncode is not None:
        return
    process.terminate()
    try:
        await asyncio.wait_for(process.wait(), grace)
    except TimeoutError:
        process.kill()
        await process.wait()


# Ports handed to servers the tests start come from below Linux's ephemeral range (32768-60999): a port the kernel
# picks for bind(0) lies in that range, where any outgoing connection (to PostgreSQL, Weaviate, ...) may take it
# before the server binds it; CI saw `ragbot serve` exit with "address already in use" that way.
_LISTEN_PORTS: Final = range(20_000, 32_768)
_PORT_TRIES: Final = 50


def free_port() -> int:
    """A TCP port free on loopback right now, outside the range outgoing connections draw from."""
    for port in random.sample(_LISTEN_PORTS, _PORT_TRIES):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def ragbot(env: dict[str, str], cwd: Path, *args: str) -> asyncio.subprocess.Process:
    """Start `python -m bot.cli.main ARGS` with pipes for its output."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli.main",
        *args,
        env=env,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def serve_logged(env: dict[str, str], cwd: Path) -> tuple[asyncio.subprocess.Process, Path]:
    """Start `ragbot serve` writing its output to serve.log in `cwd`: the process and its log."""
    log = cwd / "serve.log"
    with log.open("wb") as output:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli.main", "serve", env=env, cwd=cwd, stdout=output, stderr=output
        )
    return process, log


async def run_ragbot(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, str, str]:
    """Run a ragbot command to its end: exit code, stdout, stderr."""
    process = await ragbot(env, cwd, *args)
    stdout, stderr = await asyncio.wait_for(process.communicate(), 300)
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


async def wait_until_ready(url: str, process: asyncio.subprocess.Process) -> None:
    """Poll /readyz until it answers 200; fail if the process exits or 120 s pass."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as http:
        for _ in range(600):
            if process.returncode is not None:
                raise AssertionError("ragbot serve exited during start-up")
            try:
                async with http.get(f"{url}/readyz") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.2)
    raise AssertionError("ragbot serve was not ready within 120s")
