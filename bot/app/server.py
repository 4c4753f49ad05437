"""The aiohttp applications: /healthz, /readyz and /metrics; adapters mount their routes beside them.

/healthz says whether each part is healthy, /readyz whether this process should be sent work (its database and
index answer and no shutdown has begun), /metrics is the Prometheus exposition of the app's own registry.
When ragbot is public (bot.app.exposure) its listener gets a bare /healthz and /readyz and believes forwarding headers
from trusted proxies only; the details and /metrics stay on a loopback-only listener, so the internet learns nothing
of ragbot's parts. A local listener refuses what came through a proxy. Every listener caps bodies (bot.app.bodies).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.aiohttp import make_aiohttp_handler

from bot.app.bodies import LARGE_BODIES, MAX_BODY, limit_bodies
from bot.app.health import DEPENDENCIES, PartHealth, check_dependencies, check_parts, is_healthy
from bot.app.proxies import local_only, trusting
from bot.app.services import Services
from bot.metrics import ChatMetrics, PartMetrics, registry_of
from bot.settings_base import Network

Draining = Callable[[], bool]
"""Whether this process began to shut down (bot.chat.manager.ConversationManager.is_draining)."""

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
HEALTH_KEY = web.AppKey("health", HealthCache)
PARTS_KEY = web.AppKey("part_metrics", PartMetrics)
REGISTRY_KEY = web.AppKey("metrics_registry", CollectorRegistry)
DRAINING_KEY = web.AppKey[Draining]("draining")


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
    """200 while the database and the index answer and no shutdown has begun; else 503 naming what is not ready."""
    parts = await check_dependencies(request.app[SERVICES_KEY])
    failed = {name: part.detail for name, part in parts.items() if part.status != "ok"}
    draining = request.app[DRAINING_KEY]()
    ready = not failed and not draining
    body: dict[str, object] = {"ready": ready}
    if failed:
        body["failed"] = failed
    if draining:
        body["draining"] = True
    return web.json_response(body, status=200 if ready else 503)


async def public_readyz(request: web.Request) -> web.Response:
    """Only ready or not, from the cached health check (the internet must not make each probe a database query)."""
    parts = await request.app[HEALTH_KEY].parts()
    ready = all(parts[name].status == "ok" for name in DEPENDENCIES) and not request.app[DRAINING_KEY]()
    return web.json_response({"ready": ready}, status=200 if ready else 503)


async def metrics(request: web.Request) -> web.StreamResponse:
    """The Prometheus exposition (text, or OpenMetrics when asked) of this app's registry."""
    parts = await request.app[HEALTH_KEY].parts()
    request.app[PARTS_KEY].show({name: part.status == "ok" for name, part in parts.items()})
    return await make_aiohttp_handler(request.app[REGISTRY_KEY])(request)


def _not_draining() -> bool:
    return False


def _base_app(services: Services, health: HealthCache, draining: Draining) -> web.Application:
    # A route that takes more (uploads) streams its body in parts, which client_max_size does not limit.
    app = web.Application(client_max_size=MAX_BODY)
    app[LARGE_BODIES] = {}
    app[SERVICES_KEY] = services
    app[HEALTH_KEY] = health
    app[DRAINING_KEY] = draining
    return app


def _serve_metrics(app: web.Application, services: Services, chat: ChatMetrics) -> None:
    """/metrics from a registry of this app's own: the services' figures, the chat side's, the parts' and the
    process's."""
    embedder = services.embedder
    app[PARTS_KEY] = PartMetrics(lambda: embedder.hits, lambda: embedder.misses)
    app[REGISTRY_KEY] = registry_of(*services.metrics.groups(), chat, app[PARTS_KEY])
    app.router.add_get("/metrics", metrics)


def create_app(
    services: Services,
    chat: ChatMetrics | None = None,
    *,
    public: bool = False,
    trusted_proxies: tuple[Network, ...] = (),
    draining: Draining = _not_draining,
) -> web.Application:
    """The HTTP application bound to running services; `public` leaves out details and /metrics and believes the
    forwarding headers of `trusted_proxies`; a local one refuses proxied requests. `chat` is the chat side's
    figures to expose (the manager's); `draining` turns /readyz to 503 once a shutdown began."""
    app = _base_app(services, HealthCache(services), draining)
    app.middlewares.append(trusting(trusted_proxies) if public else local_only)
    app.middlewares.append(limit_bodies)
    if public:
        app.router.add_get("/healthz", public_healthz)
        app.router.add_get("/readyz", public_readyz)
    else:
        app.router.add_get("/healthz", healthz)
        app.router.add_get("/readyz", readyz)
        _serve_metrics(app, services, chat or ChatMetrics())
    return app
