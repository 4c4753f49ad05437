"""/metrics reads part health from a cache: a scrape every few seconds is not a database query each time."""

from __future__ import annotations

from types import SimpleNamespace

from bot.app.server import HealthCache


class _Pinged:
    def __init__(self) -> None:
        self.pings = 0

    async def ping(self) -> None:
        self.pings += 1


async def test_health_is_checked_once_per_ttl_however_often_it_is_read() -> None:
    db, store = _Pinged(), _Pinged()
    db.config = SimpleNamespace(is_sqlite=True)  # type: ignore[attr-defined]
    services = SimpleNamespace(
        db=db,
        store=store,
        weaviate_server=None,
        embedder=SimpleNamespace(provider="local", model_id="m"),
        chat_model=None,
    )
    cache = HealthCache(services, ttl=3600)  # type: ignore[arg-type]
    for _ in range(5):
        parts = await cache.parts()
    assert (db.pings, store.pings) == (1, 1)
    assert parts["db"].status == "ok"
    expired = HealthCache(services, ttl=0)  # type: ignore[arg-type]
    await expired.parts()
    await expired.parts()
    assert db.pings == 3
