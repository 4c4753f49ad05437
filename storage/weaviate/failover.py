"""NodeFailover: one client to one node of a Weaviate cluster, moved to the next node when its node stops answering."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
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
        # Closing a client cancels the calls still waiting on it (its gRPC channel's RPCs), so a replaced client is
        # kept open, as retired, until the last call that started on it ends.
        self._in_flight: Counter[weaviate.WeaviateAsyncClient] = Counter()
        self._retired: set[weaviate.WeaviateAsyncClient] = set()

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

    async def reopen(self, endpoint: WeaviateEndpoint) -> None:
        """Replace the node in use by `endpoint` (the same node started again: a new process on its ports) and open a
        fresh client to it; the old client's connections went with the old process."""
        old = self._client
        self.endpoints = (*self.endpoints[: self._index], endpoint, *self.endpoints[self._index + 1 :])
        self._client = await self._open(endpoint)
        if old is not None:
            await old.close()

    async def close(self) -> None:
        """Close the client in use and the replaced ones still answering calls."""
        clients = [self._client, *self._retired]
        self._client, self._retired = None, set()
        for client in clients:
            if client is not None:
                await client.close()

    async def run(self, call: Callable[[], Awaitable[T]]) -> T:
        """The call's result; when its node stopped answering, the result of the call sent once to the next node.

        `call` must read the client when it runs (not capture it beforehand), so the second try uses the new one.
        A call cut (CancelledError) by its client's close after a failover is sent once more too; a cancelled caller's
        is not. With a single node this is the call itself.
        """
        if not self.several:
            return await call()
        endpoint, client = self.endpoint, self.client
        try:
            async with self._counted(client):
                return await self._race(call, endpoint)
        except (NodeDown, WeaviateBaseError) as exc:
            if not isinstance(exc, NodeDown) and await answers_ready(endpoint):
                raise
            await self._move_past(endpoint, exc)
        except asyncio.CancelledError:
            if not self._lost_to_failover(client):
                raise
            log.warning("weaviate=resend from=%s to=%s reason=cancelled", endpoint.http_url, self.endpoint.http_url)
        async with self._counted(self.client):
            return await call()

    @contextlib.asynccontextmanager
    async def _counted(self, client: weaviate.WeaviateAsyncClient) -> AsyncIterator[None]:
        """One call in flight on `client`; a retired client is closed when its last call ends."""
        self._in_flight[client] += 1
        try:
            yield
        finally:
            self._in_flight[client] -= 1
            if not self._in_flight[client]:
                del self._in_flight[client]
                if client in self._retired:
                    self._retired.discard(client)
                    # Shielded: a caller cancelled now must not leave the client half closed.
                    await asyncio.shield(client.close())

    def _lost_to_failover(self, client: weaviate.WeaviateAsyncClient) -> bool:
        """Whether a CancelledError came from `client` being closed after a failover, not from the caller.

        Counting the calls keeps that from happening; this covers a call that read the client as it was replaced.
        """
        task = asyncio.current_task()
        return task is not None and task.cancelling() == 0 and self._client is not None and self._client is not client

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
            if old is not None and self._in_flight[old]:
                self._retired.add(old)
            elif old is not None:
                await old.close()


def _consume(task: asyncio.Future[Any]) -> None:
    # A call abandoned for a node that stopped answering may still end in an error; it was answered for.
    if not task.cancelled():
        task.exception()
