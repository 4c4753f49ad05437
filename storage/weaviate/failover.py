"""NodeFailover: one client to one node of a Weaviate cluster, moved to the next node when its node stops answering."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import weaviate
from weaviate.exceptions import WeaviateBaseError

from storage.errors import IndexUnavailable
from storage.weaviate.config import WeaviateEndpoint
from storage.weaviate.liveness import answers_ready

log = logging.getLogger(__name__)

T = TypeVar("T")
OpenClient = Callable[[WeaviateEndpoint], Awaitable[weaviate.WeaviateAsyncClient]]
# How long a call may run before its node is asked whether it still answers. The client retries an unreachable
# node for up to a minute (1+2+4+8+16+32 s of gRPC back-off) before it gives up; another node answers now.
_PROBE_AFTER_SECONDS = 1.0


class NodeDown(Exception):
    """The node a call was sent to stopped answering while the call waited."""


class NodeFailover:
    """The client of the first node that answers; `run` moves it to the next one when its node stops answering
    (refused connection, timeout) and sends the call there once more."""

    def __init__(self, endpoints: Sequence[WeaviateEndpoint], open_client: OpenClient) -> None:
        if not endpoints:
            raise ValueError("no Weaviate node to connect to")
        self.endpoints = tuple(endpoints)
        self._open = open_client
        self._index = 0
        self._client: weaviate.WeaviateAsyncClient | None = None
        self._moving = asyncio.Lock()

    @property
    def client(self) -> weaviate.WeaviateAsyncClient:
        """The client of the node in use."""
        if self._client is None:
            raise RuntimeError("not connected")
        return self._client

    @property
    def endpoint(self) -> WeaviateEndpoint:
        """The node in use."""
        return self.endpoints[self._index]

    @property
    def several(self) -> bool:
        """Whether there is another node to move to."""
        return len(self.endpoints) > 1

    async def connect(self) -> None:
        """Open the client of the first node that answers, starting with the one in use."""
        errors: list[str] = []
        for offset in range(len(self.endpoints)):
            index = (self._index + offset) % len(self.endpoints)
            endpoint = self.endpoints[index]
            try:
                client = await self._open(endpoint)
            except (WeaviateBaseError, OSError) as exc:
                errors.append(f"{endpoint.http_url}: {exc}")
                continue
            self._index, self._client = index, client
            return
        if not self.several:
            raise IndexUnavailable(f"Weaviate at {self.endpoint.http_url} unreachable: {errors[0]}")
        raise IndexUnavailable(f"no Weaviate node answers: {'; '.join(errors)}")

    async def close(self) -> None:
        """Close the client in use."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def run(self, call: Callable[[], Awaitable[T]]) -> T:
        """The call's result; when its node stopped answering, the result of the call sent once to the next node.

        `call` must read the client when it runs (not capture it beforehand), so the second try uses the new one.
        With a single node this is the call itself.
        """
        if not self.several:
            return await call()
        endpoint = self.endpoint
        try:
            return await self._race(call, endpoint)
        except (NodeDown, WeaviateBaseError) as exc:
            if not isinstance(exc, NodeDown) and await answers_ready(endpoint):
                raise
            await self._move_past(endpoint, exc)
        return await call()

    async def _race(self, call: Callable[[], Awaitable[T]], endpoint: WeaviateEndpoint) -> T:
        """The call, or NodeDown as soon as its node, asked while the call still waits, does not answer."""
        task = asyncio.ensure_future(call())
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=_PROBE_AFTER_SECONDS)
                if done:
                    return task.result()
                if not await answers_ready(endpoint):
                    raise NodeDown(endpoint.http_url)
        finally:
            if not task.done():
                task.cancel()
                task.add_done_callback(_consume)

    async def _move_past(self, endpoint: WeaviateEndpoint, reason: BaseException) -> None:
        async with self._moving:
            # Calls in flight fail together: the first one moves the client, the others find it moved.
            if self.endpoint != endpoint:
                return
            old = self._client
            self._index = (self._index + 1) % len(self.endpoints)
            await self.connect()
            log.warning("weaviate=failover from=%s to=%s reason=%s", endpoint.http_url, self.endpoint.http_url, reason)
            if old is not None:
                await old.close()


def _consume(task: asyncio.Future[Any]) -> None:
    # A call abandoned for a node that stopped answering may still end in an error; it was answered for.
    if not task.cancelled():
        task.exception()
