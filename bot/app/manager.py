"""The conversation manager as the service runs it: its policy from the settings, its parts from the services."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from bot.app.cluster import Cluster
from bot.app.services import Services
from bot.app.settings import Settings, platform_settings
from bot.chat.limits import RateLimit
from bot.chat.manager import ChatPolicy, ConversationManager
from bot.chat.parts import ChatParts
from bot.chat.sources import SourceBook
from bot.commands.parts import CommandParts, Uploads
from bot.knowledge.graph import GraphBuilder
from bot.knowledge.misses import MissReports
from bot.metrics import ChatMetrics
from storage.repos.config_epoch import ConfigEpochRepo
from storage.repos.posted import PostedRepo


def chat_policy(settings: Settings) -> ChatPolicy:
    """Who may do what where, from the settings."""
    defaults = settings.default_knowledge_bases()
    platforms = [model.of(settings) for model in platform_settings()]
    return ChatPolicy(
        default_kbs=defaults,
        allowed_kbs={p.platform: allowed for p in platforms if (allowed := p.allowed_kbs(defaults)) is not None},
        admins={p.platform: admins for p in platforms if (admins := p.admins())},
        separate_tenants=frozenset(p.platform for p in platforms if p.separate_tenants()),
        group_answer_mode=settings.CHAT_ANSWER_MODE,
        rate_limit=RateLimit(count=settings.CHAT_RATE_LIMIT, window=60.0),
        max_turns=settings.CHAT_MAX_CONCURRENT_TURNS,
        max_arrivals=max(settings.database_pool_size() // 2, 1),
        history_limit=settings.HISTORY_MESSAGES,
    )


def chat_parts(services: Services, cluster: Cluster | None = None) -> ChatParts:
    """What the conversation manager uses, from the running services (and the processes it shares them with)."""
    parts = ChatParts(
        conversations=services.conversations,
        settings=services.bindings,
        knowledge=services.knowledge,
        answerer=services.answerer,
        jobs=services.jobs,
        sources=SourceBook(services.documents, services.faqs),
        epochs=ConfigEpochRepo(services.db),
        media=services.media,
        posted=PostedRepo(services.db),
    )
    if cluster is None:
        return parts
    shared = replace(parts, instance=cluster.instance_id, stops=cluster.stops, live=cluster.presence.live)
    return shared if cluster.locks is None else replace(shared, turn_locks=cluster.locks)


def command_parts(services: Services) -> CommandParts:
    """What the built-in commands use, from the running services."""
    settings = services.settings
    return CommandParts(
        knowledge=services.knowledge,
        bindings=services.bindings,
        faqs=services.faqs,
        faq_importer=services.faq_importer,
        jobs=services.jobs,
        job_repo=services.job_repo,
        index_lock=services.index_lock,
        uploads=Uploads(settings.data_dir / "uploads", settings.ingestion_limits().max_file_bytes),
        schedules=services.schedules,
        web_search=services.web_leg is not None,
        graph=GraphBuilder(services.graph, services.graph_switches, services.documents, services.graph_indexer),
        misses=MissReports(services.conversations, services.embedder.transient),
    )


def build_manager(
    services: Services,
    policy: ChatPolicy,
    *,
    metrics: ChatMetrics | None = None,
    clock: Callable[[], float] | None = None,
    cluster: Cluster | None = None,
) -> ConversationManager:
    """The conversation manager over the running services."""
    parts, commands = chat_parts(services, cluster), command_parts(services)
    if clock is None:
        return ConversationManager(parts, policy, commands, metrics=metrics)
    return ConversationManager(parts, policy, commands, metrics=metrics, clock=clock)
