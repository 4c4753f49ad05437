"""The Weaviate cluster behind a client: its nodes' health, and whether it can hold the replicas asked for."""

from __future__ import annotations

from dataclasses import dataclass

import weaviate

from storage.errors import ReplicationFactorTooHigh

HEALTHY = "HEALTHY"


@dataclass(frozen=True, slots=True)
class NodeHealth:
    """One node as the cluster reports it: name, status (HEALTHY, UNHEALTHY, UNAVAILABLE, ...) and version."""

    name: str
    status: str
    version: str

    @property
    def healthy(self) -> bool:
        """Whether the node reports HEALTHY."""
        return self.status == HEALTHY


async def node_health(client: weaviate.WeaviateAsyncClient) -> list[NodeHealth]:
    """Every node of the cluster, in name order; a Raft member the member list has dropped is UNAVAILABLE.

    Weaviate's node list shows a dead node as UNAVAILABLE only until gossip declares it dead and forgets it;
    the Raft configuration keeps every voter, so a node that is gone still shows.
    """
    listed = {node.name: NodeHealth(node.name, node.status, node.version) for node in await client.cluster.nodes()}
    statistics = await client.cluster.statistics()
    members = {member.node_id for stats in statistics.statistics for member in stats.raft.latest_configuration}
    missing = {name: NodeHealth(name, "UNAVAILABLE", "") for name in members - set(listed)}
    return [health for _, health in sorted({**listed, **missing}.items())]


async def check_replication(client: weaviate.WeaviateAsyncClient, factor: int) -> None:
    """Raise ReplicationFactorTooHigh unless the cluster has at least `factor` nodes."""
    if factor <= 1:
        return
    nodes = len(await node_health(client))
    if factor > nodes:
        raise ReplicationFactorTooHigh(factor, nodes)
