"""The aiohttp applications: /healthz, /readyz and /metrics; adapters mount their routes beside them.

When ragbot is public (bot.app.exposure) its listener gets a bare /healthz and believes forwarding headers from
trusted proxies only; the details and /metrics stay on a loopback-only listener, so the internet learns nothing
of ragbot's parts. A local listener refuses what came through a proxy. Every listener caps bodies (bot.app.bodies).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from aiohttp import web

from bot.app.bodies import LARGE_BODIES, MAX_BODY, limit_bodies
from bot.app.health import PartHealth, check_parts, is_healthy
from bot.app.proxies import local_only, trusting
from bot.app.services import Services
from bot.metrics import ChatMetrics
from bot.settings_base import Network

# A scrape every few seconds must not become a database and index query every few seconds.
_HEALTH_TTL = 15.0


@dataclass(slots=True)
class HealthCache:
    """The last health check, reused for `ttl` seconds."""

    services: Services
    ttl: float = _HEALTH_TTL
    _parts: dict[str, PartHealth] = field(default_factory=dict)
    _checked: float = float("-inf")
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def parts(self) -> dict[str, PartHealth]:
        """Every part's health, checked at most once per `ttl`."""
        async with self._lock:
            if time.monotonic() - self._checked >= self.ttl:
                self._parts = await check_parts(self.services)
                self._checked = time.monotonic()
            return self._parts


SERVICES_KEY = web.AppKey("services", Services)
STARTED_KEY = web.AppKey("started_at", float)
HEALTH_KEY = web.AppKey("health", HealthCache)
CHAT_KEY = web.AppKey("chat_metrics", ChatMetrics)


async def healthz(request: web.Request) -> web.Response:
    """Each part's status; 503 when any part is in error."""
    parts = await check_parts(request.app[SERVICES_KEY])
    body = {name: {"status": part.status, "detail": part.detail} for name, part in parts.items()}
    return web.json_response(body, status=200 if is_healthy(parts) else 503)


async def public_healthz(request: web.Request) -> web.Response:
    """Only ok or not, for a load balancer on a public listener."""
    healthy = is_healthy(await request.app[HEALTH_KEY].parts())
    return web.json_response({"status": "ok" if healthy else "error"}, status=200 if healthy else 503)


async def readyz(request: web.Request) -> web.Response:
    """200 once start-up has finished (the app only exists after build_services succeeded)."""
    return web.json_response({"ready": True})


async def metrics(request: web.Request) -> web.Response:
    """Prometheus text exposition of process, part, stage and chat metrics."""
    services = request.app[SERVICES_KEY]
    parts = await request.app[HEALTH_KEY].parts()
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
        *request.app[CHAT_KEY].render(),
    ]
    return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")


def _base_app(services: Services, chat: ChatMetrics, health: HealthCache) -> web.Application:
    # A route that takes more (uploads) streams its body in parts, which client_max_size does not limit.
    app = web.Application(client_max_size=MAX_BODY)
    app[LARGE_BODIES] = {}
    app[SERVICES_KEY] = services
    app[STARTED_KEY] = time.monotonic()
    app[HEALTH_KEY] = health
    app[CHAT_KEY] = chat
    app.router.add_get("/readyz", readyz)
    return app


def create_app(
    services: Services,
    chat: ChatMetrics | None = None,
    *,
    public: bool = False,
    trusted_proxies: tuple[Network, ...] = (),
) -> web.Application:
    """The HTTP application bound to running services; `public` leaves out details and /metrics and believes the
    forwarding headers of `trusted_proxies`; a local one refuses proxied requests."""
    chat = chat or ChatMetrics()
    app = _base_app(services, chat, HealthCache(services))
    app.middlewares.append(trusting(trusted_proxies) if public else local_only)
    app.middlewares.append(limit_bodies)
    if public:
        app.router.add_get("/healthz", public_healthz)
    else:
        app.router.add_get("/healthz", healthz)
        app.router.add_get("/metrics", metrics)
    return app
