"""The aiohttp application: /healthz, /readyz and /metrics; adapters mount their routes beside them."""

from __future__ import annotations

import time

from aiohttp import web

from bot.health import check_parts, is_healthy
from bot.services import Services

SERVICES_KEY = web.AppKey("services", Services)
STARTED_KEY = web.AppKey("started_at", float)


async def healthz(request: web.Request) -> web.Response:
    """Each part's status; 503 when any part is in error."""
    parts = await check_parts(request.app[SERVICES_KEY])
    body = {name: {"status": part.status, "detail": part.detail} for name, part in parts.items()}
    return web.json_response(body, status=200 if is_healthy(parts) else 503)


async def readyz(request: web.Request) -> web.Response:
    """200 once start-up has finished (the app only exists after build_services succeeded)."""
    return web.json_response({"ready": True})


async def metrics(request: web.Request) -> web.Response:
    """Prometheus text exposition of process and part metrics."""
    services = request.app[SERVICES_KEY]
    parts = await check_parts(services)
    lines = [
        "# TYPE ragbot_uptime_seconds gauge",
        f"ragbot_uptime_seconds {time.monotonic() - request.app[STARTED_KEY]:.3f}",
        "# TYPE ragbot_part_up gauge",
        *(f'ragbot_part_up{{part="{name}"}} {int(part.status == "ok")}' for name, part in parts.items()),
        "# TYPE ragbot_embedding_cache_hits_total counter",
        f"ragbot_embedding_cache_hits_total {services.embedder.hits}",
        "# TYPE ragbot_embedding_cache_misses_total counter",
        f"ragbot_embedding_cache_misses_total {services.embedder.misses}",
        *services.stage_metrics.render(),
    ]
    return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")


def create_app(services: Services) -> web.Application:
    """The HTTP application bound to running services."""
    app = web.Application()
    app[SERVICES_KEY] = services
    app[STARTED_KEY] = time.monotonic()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    return app
