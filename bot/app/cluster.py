"""This `ragbot serve` among the others on its database: presence, conversation locks, stops, turn recovery.

On PostgreSQL any number of processes serve one database: each conversation's turns take a lease, and a /stop
heard by one process reaches the one writing the answer through LISTEN/NOTIFY. SQLite serves one process, so
neither is needed there; presence and recovery run on both (a restarted process finishes what its predecessor
was writing), on PostgreSQL with the presence beating on a thread of its own (bot.app.heartbeat).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

from bot.app.heartbeat import beating_apart
from bot.app.services import Services
from bot.chat.instances import ConversationLocks, HeldLeases, Presence, new_instance_id
from bot.chat.manager import ConversationManager
from bot.chat.parts import LocalStops, StopBus, TurnLocks
from bot.chat.recovery import TurnRecovery
from storage.notify import Notifications
from storage.repos.leases import LeaseRepo

STOP_CHANNEL = "ragbot_stop"


@dataclass(frozen=True, slots=True)
class Cluster:
    """What the conversation manager needs to share a database with other processes."""

    presence: Presence
    locks: TurnLocks | None
    stops: StopBus
    notifications: Notifications | None

    @property
    def instance_id(self) -> str:
        """This process's name among the others."""
        return self.presence.instance_id


@asynccontextmanager
async def join(services: Services) -> AsyncIterator[Cluster]:
    """Announce this process (and leave on exit); on PostgreSQL also lock conversations and carry stops, with the
    presence beating on a thread of its own so a busy process is not mistaken for a dead one."""
    leases = LeaseRepo(services.db)
    period = services.settings.INSTANCE_LEASE
    instance_id = new_instance_id()
    async with AsyncExitStack() as stack:
        if services.db.config.is_sqlite:
            presence = Presence(leases, instance_id, period=period)
            await presence.start()
            stack.push_async_callback(presence.stop)
            yield Cluster(presence, None, LocalStops(), None)
            return
        held = HeldLeases()
        presence = await stack.enter_async_context(beating_apart(services.db.config, instance_id, held, period=period))
        notifications = Notifications(services.db, STOP_CHANNEL)
        locks = ConversationLocks(leases, instance_id, held, period=period)
        yield Cluster(presence, locks, notifications, notifications)


@asynccontextmanager
async def serve_turns(cluster: Cluster, services: Services, manager: ConversationManager) -> AsyncIterator[None]:
    """Hear stops for the answers this process writes, and take over those whose process died, until exit."""
    async with AsyncExitStack() as stack:
        if cluster.notifications is not None:
            await cluster.notifications.start(lambda conversation_id: _stop_here(manager, conversation_id))
            stack.push_async_callback(cluster.notifications.stop)
        recovery = TurnRecovery(
            services.conversations,
            manager,
            cluster.presence.live,
            every=max(cluster.presence.period / 3, 1.0),
            max_age=services.settings.TURN_RESUME_MAX_AGE,
        )
        await recovery.start()
        stack.push_async_callback(recovery.stop)
        yield


def _stop_here(manager: ConversationManager, conversation_id: str) -> None:
    manager.stop_here(conversation_id)
