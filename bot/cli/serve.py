"""`ragbot serve`: every part and the chat platforms, served over HTTP until SIGINT or SIGTERM."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web

from bot.app import cluster
from bot.app.exposure import Exposure, exposure_of
from bot.app.manager import build_manager, chat_policy
from bot.app.platforms import load_adapters
from bot.app.schedule import build_scheduler
from bot.app.server import create_app
from bot.app.services import build_services
from bot.app.settings import Settings, is_loopback, platform_settings
from bot.cli.signals import stop_requested
from bot.knowledge.bases import KnowledgeBases
from bot.metrics import ChatMetrics
from bot.ports import Adapter
from bot.words.messages import knowledge_bases_missing

log = logging.getLogger("ragbot")


async def _start_site(app: web.Application, host: str, port: int) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner


async def _stop_listening(runners: list[web.AppRunner]) -> None:
    """Close the listening sockets; requests already in flight (an answer's stream) go on."""
    for runner in runners:
        for site in list(runner.sites):
            await site.stop()


async def _stop_all(
    adapters: Sequence[Adapter], runners: list[web.AppRunner], stop_jobs: Callable[[], Awaitable[None]]
) -> None:
    """Stop the adapters, the listeners and the scheduled work, each whatever the one before it did."""
    for adapter in reversed(adapters):
        try:
            await adapter.stop()
        except Exception:
            log.exception("serve=adapter_stop_failed adapter=%s", type(adapter).__name__)
    for runner in reversed(runners):
        try:
            await runner.cleanup()
        except Exception:
            log.exception("serve=listener_stop_failed")
    await stop_jobs()


async def _warn_of_missing_knowledge_bases(settings: Settings, knowledge: KnowledgeBases) -> None:
    """One line naming the knowledge bases the settings name that do not exist, and how to create them."""
    named = {"DEFAULT_KNOWLEDGE_BASES": settings.default_knowledge_bases()}
    for model in platform_settings():
        named |= model.of(settings).named_kbs()
    named = {setting: names for setting, names in named.items() if names}
    wanted = dict.fromkeys(name for names in named.values() for name in names)
    missing = [name for name in wanted if await knowledge.named(name) is None]
    if missing:
        settings_naming = [setting for setting, names in named.items() if set(names) & set(missing)]
        log.warning(
            "knowledge_bases=missing names=%s note=%r",
            ",".join(missing),
            knowledge_bases_missing(missing, settings_naming),
        )


def _say_exposure(settings: Settings, exposure: Exposure) -> None:
    """One line on who may reach ragbot, and what a proxy in front of it needs."""
    if not exposure.public:
        log.info(
            "serve=local note=%r",
            "only this machine may connect; behind a reverse proxy set RAGBOT_PUBLIC=true, WEB_ACCESS_TOKEN and "
            "RAGBOT_TRUSTED_PROXIES=<the proxy's address>",
        )
        return
    log.info("serve=public reason=%s", exposure.reason)
    if not exposure.trusted_proxies and is_loopback(settings.RAGBOT_HOST):
        log.warning(
            "serve=public trusted_proxies=none note=%r",
            "a proxy in front of this loopback listener is not trusted: every client has its address (one rate "
            "limit, one admin lock-out for all), cookies are not Secure, and the page's origin must match the "
            "Host it sends; set RAGBOT_TRUSTED_PROXIES=127.0.0.1 and have it send X-Forwarded-For/-Proto/-Host",
        )


async def serve(settings: Settings) -> None:
    """Start every part and the chat adapters, serve HTTP until SIGINT/SIGTERM, then stop in reverse order."""
    stop = stop_requested()
    async with build_services(settings, serving=True) as services, cluster.join(services) as peers:
        services.ensure_vectors_match()
        await _warn_of_missing_knowledge_bases(settings, services.knowledge)
        chat_metrics = ChatMetrics()
        manager = build_manager(services, chat_policy(settings), metrics=chat_metrics, cluster=peers)
        adapters = load_adapters(manager, settings, services.db)
        exposure = exposure_of(settings)
        public = exposure.public
        app = create_app(
            services,
            chat_metrics,
            public=public,
            trusted_proxies=exposure.trusted_proxies,
            draining=manager.is_draining,
        )
        for adapter in adapters:
            adapter.mount(app)
        runners: list[web.AppRunner] = []
        # Jobs queued or interrupted before this start are picked up here.
        await services.jobs.start()
        scheduler = build_scheduler(services, manager, owner=services.jobs.owner)

        async def stop_work() -> None:
            try:
                await scheduler.stop()
            except Exception:
                log.exception("serve=scheduler_stop_failed")
            await services.jobs.stop()

        try:
            await scheduler.start()
            runners.append(await _start_site(app, settings.RAGBOT_HOST, settings.RAGBOT_PORT))
            if public:
                internal = create_app(services, chat_metrics, draining=manager.is_draining)
                runners.append(await _start_site(internal, "127.0.0.1", settings.internal_port()))
                log.info("serve=internal url=http://127.0.0.1:%s/metrics", settings.internal_port())
            for adapter in adapters:
                await adapter.start()
            async with cluster.serve_turns(peers, services, manager):
                log.info("serve=listening url=http://%s:%s/ (web chat)", settings.RAGBOT_HOST, settings.RAGBOT_PORT)
                _say_exposure(settings, exposure)
                await stop.wait()
                log.info("serve=stopping")
                # Accept nothing more, then let the answers in flight end (or cut them) while the recovery and the
                # stops still run.
                await _stop_listening(runners)
                await manager.drain(settings.SHUTDOWN_GRACE)
        finally:
            await _stop_all(adapters, runners, stop_work)
