"""/readyz: ready while the database and the index answer and no shutdown began; 503 naming what is not ready."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from bot.app.server import create_app
from bot.metrics import ServiceMetrics
from storage.errors import DatabaseUnavailable


class _Part:
    """A database or index whose ping answers, or raises what a part that is down raises."""

    def __init__(self, down: Exception | None = None) -> None:
        self.down = down
        self.config = SimpleNamespace(is_sqlite=True)

    async def ping(self) -> None:
        if self.down is not None:
            raise self.down


def _services(db: _Part, store: _Part) -> Any:
    return SimpleNamespace(
        db=db,
        store=store,
        weaviate_server=None,
        embedder=SimpleNamespace(provider="local", model_id="m", hits=0, misses=0),
        chat_model=None,
        metrics=ServiceMetrics(),
    )


def _routes(app: web.Application, path: str) -> list[web.AbstractRoute]:
    return [route for route in app.router.routes() if route.resource and route.resource.canonical == path]


async def _get(app: web.Application, path: str) -> tuple[int, Any]:
    (route,) = [route for route in _routes(app, path) if route.method == "GET"]
    response = await route.handler(make_mocked_request("GET", path, app=app))
    assert isinstance(response, web.Response)
    assert response.text is not None
    return response.status, json.loads(response.text)


async def test_ready_while_the_database_and_the_index_answer() -> None:
    app = create_app(_services(_Part(), _Part()))
    assert await _get(app, "/readyz") == (200, {"ready": True})


async def test_not_ready_names_the_dependency_that_failed_and_why() -> None:
    down = DatabaseUnavailable("postgresql://db/ragbot", "connection refused")
    app = create_app(_services(_Part(down), _Part()))
    status, body = await _get(app, "/readyz")
    assert status == 503
    assert body["ready"] is False
    assert set(body["failed"]) == {"db"}
    assert "connection refused" in body["failed"]["db"]


async def test_not_ready_once_a_shutdown_began_though_every_part_answers() -> None:
    draining = False
    app = create_app(_services(_Part(), _Part()), draining=lambda: draining)
    assert (await _get(app, "/readyz"))[0] == 200
    draining = True
    assert await _get(app, "/readyz") == (503, {"ready": False, "draining": True})


async def test_a_public_listener_says_only_whether_it_is_ready() -> None:
    down = DatabaseUnavailable("postgresql://db/ragbot", "connection refused")
    app = create_app(_services(_Part(down), _Part()), public=True)
    assert await _get(app, "/readyz") == (503, {"ready": False})
    assert not _routes(app, "/metrics")
