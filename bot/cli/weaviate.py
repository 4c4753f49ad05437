"""`ragbot weaviate`: the local Weaviate server in the foreground, with its log on the terminal."""

from __future__ import annotations

import asyncio

from bot.app.settings import Settings
from bot.cli.signals import stop_requested
from storage.weaviate.server import WeaviateServer


async def run_weaviate(settings: Settings) -> None:
    """Run the local Weaviate in the foreground until interrupted."""
    stop = stop_requested()
    server = WeaviateServer(settings.weaviate_server(), log_to_terminal=True)
    endpoint = await server.start()
    print(f"weaviate ready: http {endpoint.http_url}  grpc {endpoint.grpc_host}:{endpoint.grpc_port}", flush=True)
    try:
        stopped = asyncio.create_task(stop.wait())
        exited = asyncio.create_task(server.wait())
        await asyncio.wait({stopped, exited}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
    finally:
        await server.stop()
