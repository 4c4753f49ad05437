"""Socket Mode: apps.connections.open's one-time URL, the websocket, envelopes pushed and their acks."""

from __future__ import annotations

import asyncio
import json
import uuid
from types import TracebackType

from aiohttp import WSMsgType, web

from fakes.base import Json
from fakes.slack.state import SlackState
from fakes.slack.wire import Ctx


class SocketMode(SlackState):
    """FakeSlackAPI's Socket Mode: it pushes envelopes on the newest socket and returns the app's ack."""

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for socket in list(self._sockets):
            await socket.close()
        for waiter in self._acks.values():
            waiter.cancel()
        await super().__aexit__(exc_type, exc, tb)

    @property
    def socket_connections(self) -> int:
        """How many Socket Mode websockets are open."""
        return len(self._sockets)

    async def socket_push(
        self,
        payload_type: str,
        payload: Json,
        *,
        retry_attempt: int = 0,
        retry_reason: str = "",
        timeout: float = 10.0,  # noqa: ASYNC109  # a timeout argument reads best in tests
    ) -> Json:
        """Send an envelope ("events_api", "slash_commands", "interactive") on the newest socket; return its ack."""
        await self.wait_for(lambda: self._sockets, timeout)
        envelope_id = str(uuid.uuid4())
        accepts = payload_type == "slash_commands" or payload.get("type") in ("view_submission", "block_suggestion")
        envelope: Json = {
            "envelope_id": envelope_id,
            "payload": payload,
            "type": payload_type,
            "accepts_response_payload": accepts,
        }
        if payload_type == "events_api":
            envelope.update(retry_attempt=retry_attempt, retry_reason=retry_reason)
        waiter: asyncio.Future[Json] = asyncio.get_running_loop().create_future()
        self._acks[envelope_id] = waiter
        try:
            await self._sockets[-1].send_json(envelope)
            async with asyncio.timeout(timeout):
                return await waiter
        finally:
            self._acks.pop(envelope_id, None)

    async def socket_disconnect(self, reason: str = "refresh_requested") -> None:
        """Ask every connected client to reconnect, as Slack does before it closes a socket."""
        for socket in list(self._sockets):
            await socket.send_json({"type": "disconnect", "reason": reason, "debug_info": {"host": "applink-fake"}})

    async def _connections_open(self, ctx: Ctx) -> Json:
        ticket = uuid.uuid4().hex
        self._tickets.add(ticket)
        return {"url": self.url(f"/link/?ticket={ticket}&app_id={self.app_id}").replace("http://", "ws://", 1)}

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        ticket = request.query.get("ticket", "")
        if ticket not in self._tickets:
            return web.Response(status=401, text="invalid ticket")
        self._tickets.discard(ticket)  # a wss URL is good for one connection
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self._sockets.append(socket)
        self._notify()
        try:
            await socket.send_json(
                {
                    "type": "hello",
                    "num_connections": len(self._sockets),
                    "debug_info": {"host": "applink-fake", "build_number": 1, "approximate_connection_time": 18060},
                    "connection_info": {"app_id": self.app_id},
                }
            )
            async for frame in socket:
                try:
                    ack = json.loads(frame.data) if frame.type == WSMsgType.TEXT else None
                except ValueError:
                    ack = None
                if not isinstance(ack, dict):
                    continue
                self.socket_acks.append(ack)
                waiter = self._acks.get(str(ack.get("envelope_id")))
                if waiter is not None and not waiter.done():
                    waiter.set_result(ack)
                self._notify()
        finally:
            self._sockets.remove(socket)
            self._notify()
        return socket
