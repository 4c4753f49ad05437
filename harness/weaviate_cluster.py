"""A three-node Weaviate cluster on loopback from the weaviate-server binary: start, kill -9 a node, restart it.

Dev and test only. The environment follows Weaviate's own tools/dev/run_dev_server.sh (`local-development`,
`second-node`, `third-node`): CLUSTER_IN_LOCALHOST, each node's gossip and data ports, CLUSTER_JOIN to the first
node's gossip port, and RAFT_JOIN naming every node by its name and Raft port.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import aiohttp

from harness.processes import stop_process
from storage.weaviate.server import NODE_DEFAULTS

NODE_COUNT = 3
_READY_TIMEOUT_SECONDS = 120.0
_STOP_GRACE_SECONDS = 20.0
_POLL_SECONDS = 0.2


@dataclass(frozen=True, slots=True)
class NodePorts:
    """Every port one node listens on; the Raft RPC port is the Raft port + 1 (CLUSTER_IN_LOCALHOST's rule)."""

    http: int
    grpc: int
    gossip: int
    data: int
    raft: int

    @property
    def raft_rpc(self) -> int:
        """The internal Raft RPC port Weaviate derives for a local cluster's peers (cluster/resolver/rpc.go)."""
        return self.raft + 1


@dataclass(frozen=True, slots=True)
class ClusterNode:
    """One node: its name, where it keeps its data and which ports it uses (the same across restarts)."""

    name: str
    data_dir: Path
    ports: NodePorts

    @property
    def http_url(self) -> str:
        """The node's REST base URL."""
        return f"http://127.0.0.1:{self.ports.http}"

    @property
    def grpc_url(self) -> str:
        """The node's gRPC address as WEAVIATE_GRPC_URL names it."""
        return f"http://127.0.0.1:{self.ports.grpc}"


def _free_ports(count: int, *, pairs: int = 0) -> list[int]:
    """`count` distinct free loopback ports; the first `pairs` of them also have their successor free."""
    held: list[socket.socket] = []
    found: list[int] = []
    try:
        while len(found) < count:
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            held.append(sock)
            port = int(sock.getsockname()[1])
            if len(found) < pairs:
                successor = socket.socket()
                try:
                    successor.bind(("127.0.0.1", port + 1))
                except OSError:
                    successor.close()
                    continue
                held.append(successor)
            found.append(port)
        return found
    finally:
        for sock in held:
            sock.close()


def plan_nodes(root: Path, count: int = NODE_COUNT) -> list[ClusterNode]:
    """Names node1..N, a data dir under `root` and free ports for each."""
    ports = _free_ports(5 * count, pairs=count)
    raft, rest = ports[:count], ports[count:]
    nodes = []
    for index in range(count):
        http, grpc, gossip, data = rest[4 * index : 4 * index + 4]
        name = f"node{index + 1}"
        nodes.append(ClusterNode(name, root / name, NodePorts(http, grpc, gossip, data, raft=raft[index])))
    return nodes


def node_env(node: ClusterNode, nodes: list[ClusterNode]) -> dict[str, str]:
    """The environment one node starts with."""
    first = nodes[0]
    env = {
        **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TZ", "LANG")},
        "PERSISTENCE_DATA_PATH": str(node.data_dir),
        "CLUSTER_HOSTNAME": node.name,
        "CLUSTER_IN_LOCALHOST": "true",
        "CLUSTER_BIND_ADDR": "127.0.0.1",
        "CLUSTER_GOSSIP_BIND_PORT": str(node.ports.gossip),
        "CLUSTER_DATA_BIND_PORT": str(node.ports.data),
        "RAFT_PORT": str(node.ports.raft),
        "RAFT_INTERNAL_RPC_PORT": str(node.ports.raft_rpc),
        "RAFT_JOIN": ",".join(f"{peer.name}:{peer.ports.raft}" for peer in nodes),
        "RAFT_BOOTSTRAP_EXPECT": str(len(nodes)),
        # Weaviate multiplies Raft's 1 s timeouts by 5 by default; on loopback 1 is plenty, and a killed leader is
        # replaced in a few seconds (the local single-node server uses 1 too).
        "RAFT_TIMEOUTS_MULTIPLIER": "1",
        "GRPC_PORT": str(node.ports.grpc),
        # A killed node is declared dead in about a second instead of memberlist's LAN default of several.
        "MEMBERLIST_FAST_FAILURE_DETECTION": "true",
        # Async replication compares replicas every 30 s and holds back objects younger than 30 s by default:
        # a restarted node would take a minute to catch up. Tests want it in seconds.
        "ASYNC_REPLICATION_FREQUENCY": "1s",
        "ASYNC_REPLICATION_FREQUENCY_WHILE_PROPAGATING": "1s",
        "ASYNC_REPLICATION_PROPAGATION_DELAY": "1s",
        **NODE_DEFAULTS,
    }
    if node is not first:
        env["CLUSTER_JOIN"] = f"127.0.0.1:{first.ports.gossip}"
    return env


class WeaviateCluster:
    """Three weaviate-server processes forming one cluster; nodes can be killed and restarted by name."""

    def __init__(self, binary: Path, root: Path) -> None:
        if not binary.is_file() or not os.access(binary, os.X_OK):
            raise FileNotFoundError(f"weaviate-server binary missing or not executable: {binary}")
        self.binary = binary.resolve()
        self.nodes = plan_nodes(root)
        self._processes: dict[str, asyncio.subprocess.Process] = {}
        self._logs: dict[str, IO[bytes]] = {}

    @property
    def http_urls(self) -> str:
        """WEAVIATE_URL naming every node, comma-separated."""
        return ",".join(node.http_url for node in self.nodes)

    @property
    def grpc_urls(self) -> str:
        """WEAVIATE_GRPC_URL naming every node's gRPC port, in the same order."""
        return ",".join(node.grpc_url for node in self.nodes)

    def node(self, name: str) -> ClusterNode:
        """The node called `name`."""
        return next(node for node in self.nodes if node.name == name)

    def pids(self) -> dict[str, int]:
        """Each running node's process id, by name (a benchmark reads their CPU from /proc)."""
        return {name: process.pid for name, process in self._processes.items() if process.returncode is None}

    def running(self, name: str) -> bool:
        """Whether the node's process runs."""
        process = self._processes.get(name)
        return process is not None and process.returncode is None

    def pid(self, name: str) -> int | None:
        """The running node's process id (None while it is down), to read its memory from /proc."""
        process = self._processes.get(name)
        return process.pid if process is not None and process.returncode is None else None

    async def start(self) -> None:
        """Start every node and return once all are ready and the cluster reports all of them healthy."""
        for node in self.nodes:
            await self._spawn(node)
        await self.wait_healthy()

    async def kill(self, name: str) -> None:
        """SIGKILL one node, as a crash or a pulled plug would stop it; return once its process is gone and the
        other nodes have settled (see `wait_settled`)."""
        process = self._processes[name]
        process.send_signal(signal.SIGKILL)
        await asyncio.wait_for(process.wait(), _STOP_GRACE_SECONDS)
        self._close_log(name)
        await self.wait_settled()

    async def restart(self, name: str) -> None:
        """Start a killed node again on its own data dir and ports; return once the cluster is whole again."""
        if self.running(name):
            raise RuntimeError(f"{name} still runs")
        await self._spawn(self.node(name))
        await self.wait_healthy()
        await self.wait_settled()

    async def stop(self) -> None:
        """Stop every running node: SIGTERM, then SIGKILL after a grace period."""
        for name, process in list(self._processes.items()):
            await stop_process(process, _STOP_GRACE_SECONDS)
            self._close_log(name)
        self._processes.clear()

    async def wait_healthy(self, seconds: float = _READY_TIMEOUT_SECONDS) -> None:
        """Wait until every node answers ready and each one's /v1/nodes lists all nodes as HEALTHY."""
        deadline = time.monotonic() + seconds
        expected = {node.name for node in self.nodes}
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as http:
            for node in self.nodes:
                while not await _healthy_view(http, node, expected):
                    self._raise_if_exited()
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"the cluster was not healthy within {seconds:.0f}s; {self.log_tails()}")
                    await asyncio.sleep(_POLL_SECONDS)

    async def wait_settled(self, seconds: float = _READY_TIMEOUT_SECONDS) -> None:
        """Wait until every running node answers a schema read, which Weaviate sends to the Raft leader.

        Killing the leader leaves the others forwarding such reads to it, each hanging up to its 30 s timeout,
        until they follow the next one (seen with 1.38.11): a cluster is usable again only after this.
        """
        deadline = time.monotonic() + seconds
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=3)) as http:
            for node in self.nodes:
                while self.running(node.name) and not await _answers_schema(http, node):
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{node.name} did not answer a schema read within {seconds:.0f}s")
                    await asyncio.sleep(_POLL_SECONDS)

    async def wait_not_healthy(self, observer: str, name: str, seconds: float = 60.0) -> None:
        """Wait until `observer`'s /v1/nodes no longer reports node `name` HEALTHY (another status, or gone)."""
        deadline = time.monotonic() + seconds
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as http:
            while (await _statuses(http, self.node(observer))).get(name) == "HEALTHY":
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{observer} still reports {name} HEALTHY after {seconds:.0f}s")
                await asyncio.sleep(_POLL_SECONDS)

    def log_tails(self) -> str:
        """The last log line of each node, to name why a start failed."""
        tails = []
        for node in self.nodes:
            path = node.data_dir / "weaviate.log"
            lines = path.read_text(errors="replace").strip().splitlines() if path.exists() else []
            tails.append(f"{node.name}: {lines[-1][:300] if lines else '(no log)'}")
        return "; ".join(tails)

    async def _spawn(self, node: ClusterNode) -> None:
        node.data_dir.mkdir(parents=True, exist_ok=True)
        log = (node.data_dir / "weaviate.log").open("ab")
        self._logs[node.name] = log
        self._processes[node.name] = await asyncio.create_subprocess_exec(
            str(self.binary),
            "--host",
            "127.0.0.1",
            "--port",
            str(node.ports.http),
            "--scheme",
            "http",
            "--read-timeout",
            "600s",
            "--write-timeout",
            "600s",
            env=node_env(node, self.nodes),
            cwd=str(node.data_dir),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=asyncio.subprocess.STDOUT,
        )

    def _raise_if_exited(self) -> None:
        for name, process in self._processes.items():
            if process.returncode is not None and name in self._logs:
                raise RuntimeError(f"{name} exited with {process.returncode}; {self.log_tails()}")

    def _close_log(self, name: str) -> None:
        log = self._logs.pop(name, None)
        if log is not None:
            log.close()


async def _statuses(http: aiohttp.ClientSession, node: ClusterNode) -> dict[str, str]:
    """Node name -> status as `node` sees the cluster; empty while it does not answer."""
    with contextlib.suppress(aiohttp.ClientError, TimeoutError, ValueError):
        async with http.get(f"{node.http_url}/v1/nodes") as response:
            if response.status == 200:
                body = await response.json()
                return {str(item["name"]): str(item["status"]) for item in body.get("nodes", [])}
    return {}


async def _answers_schema(http: aiohttp.ClientSession, node: ClusterNode) -> bool:
    with contextlib.suppress(aiohttp.ClientError, TimeoutError):
        async with http.get(f"{node.http_url}/v1/schema") as response:
            return response.status == 200
    return False


async def _healthy_view(http: aiohttp.ClientSession, node: ClusterNode, expected: set[str]) -> bool:
    with contextlib.suppress(aiohttp.ClientError, TimeoutError):
        async with http.get(f"{node.http_url}/v1/.well-known/ready") as response:
            if response.status != 200:
                return False
    statuses = await _statuses(http, node)
    return set(statuses) == expected and all(status == "HEALTHY" for status in statuses.values())


@asynccontextmanager
async def running_cluster(binary: Path, root: Path) -> AsyncIterator[WeaviateCluster]:
    """A started three-node cluster, stopped afterwards."""
    cluster = WeaviateCluster(binary, root)
    try:
        await cluster.start()
        yield cluster
    finally:
        await cluster.stop()
