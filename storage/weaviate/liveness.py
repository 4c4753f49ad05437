"""Whether the Weaviate a store talks to is still there: the exit of a local server, the readiness of any."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp

from storage.weaviate.config import WeaviateEndpoint

log = logging.getLogger(__name__)

T = TypeVar("T")
# Long enough for a remote Weaviate across a slow link, short enough not to hide a failure behind a wait.
_READY_TIMEOUT_SECONDS = 5.0


class ServerExited(Exception):
    """The watched server process exited while a call to it was waiting."""


class ExitWatch:
    """Knows the moment a local server process exits, by a Linux pidfd rather than by polling."""

    def __init__(self, pid: int, fd: int, loop: asyncio.AbstractEventLoop) -> None:
        self.pid = pid
        self._fd = fd
        self._loop = loop
        self._exited = asyncio.Event()
        loop.add_reader(fd, self._on_exit)

    @classmethod
    def start(cls, pid: int) -> ExitWatch | None:
        """A watch on `pid`; None where pidfds are missing (not Linux) or the process is already gone."""
        try:
            fd = os.pidfd_open(pid)
        except (AttributeError, OSError) as exc:
            log.info("weaviate=unwatched pid=%s reason=%s", pid, exc)
            return None
        return cls(pid, fd, asyncio.get_running_loop())

    @property
    def exited(self) -> bool:
        """Whether the process has exited."""
        return self._exited.is_set()

    async def race(self, call: Callable[[], Awaitable[T]]) -> T:
        """The call's result, or ServerExited as soon as the process exits while it waits.

        The Weaviate client retries an unreachable server for about a minute (1+2+4+8+16+32 s of back-off);
        a server that has exited will not come back on the same ports, so there is nothing to wait for.
        """
        task = asyncio.ensure_future(call())
        exited = asyncio.ensure_future(self._exited.wait())
        try:
            await asyncio.wait({task, exited}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            exited.cancel()
            if not task.done():
                task.cancel()
                task.add_done_callback(_consume)
        if task.done() and not task.cancelled():
            return task.result()
        raise ServerExited(self.pid)

    def close(self) -> None:
        """Stop watching and release the pidfd."""
        self._loop.remove_reader(self._fd)
        os.close(self._fd)

    def _on_exit(self) -> None:
        self._loop.remove_reader(self._fd)
        self._exited.set()


def _consume(task: asyncio.Future[Any]) -> None:
    # A call abandoned for a gone server may still end in an error; it was already answered for.
    if not task.cancelled():
        task.exception()


async def answers_ready(endpoint: WeaviateEndpoint) -> bool:
    """Whether Weaviate's REST readiness endpoint answers 200, within a few seconds."""
    try:
        async with (
            # trust_env: through the same proxy settings as the Weaviate client's httpx, which honours them.
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=_READY_TIMEOUT_SECONDS), trust_env=True) as http,
            http.get(f"{endpoint.http_url}/v1/.well-known/ready") as response,
        ):
            return response.status == 200
    except (aiohttp.ClientError, TimeoutError):
        return False
