"""Supervisor of the local weaviate-server binary: free loopback ports, readiness, clean stop, no orphans."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import itertools
import json
import logging
import os
import signal
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO

import aiohttp

from storage.errors import IndexUnavailable, ServerInUse, StorageError, WeaviateBinaryMissing
from storage.weaviate.config import WeaviateEndpoint, WeaviateServerConfig

log = logging.getLogger(__name__)

# What every node ragbot starts runs with, alone or in a cluster: no modules and no calls out, anonymous access on
# loopback, memory kept within the machine's.
NODE_DEFAULTS = {
    "DEFAULT_VECTORIZER_MODULE": "none",
    "API_BASED_MODULES_DISABLED": "true",
    "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED": "true",
    "DISABLE_TELEMETRY": "true",
    "GO_PROFILING_DISABLE": "true",
    "LIMIT_RESOURCES": "true",
    "QUERY_DEFAULTS_LIMIT": "10",
}

_PID_FILE = "ragbot-weaviate.pid"
_ENDPOINT_FILE = "ragbot-weaviate.endpoint.json"
_NODE_NAME_FILE = "ragbot-node-name"
_LOG_FILE = "weaviate.log"
_STOP_GRACE_SECONDS = 20.0
_PR_SET_PDEATHSIG = 1
# Seconds between tries to start a server that exited unasked again; the last is kept once reached.
_RESTART_WAITS = (0.0, 1.0, 2.0, 5.0, 10.0, 30.0)
# Told of each start after an unasked exit, with the new process's endpoint (same ports).
Restarted = Callable[["WeaviateEndpoint"], Awaitable[None]]


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: the kernel sends SIGTERM when ragbot dies,
    # even by SIGKILL, so a crash never leaves an orphan server holding the data dir.
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct TCP ports that are free on `host` right now."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name in field 2 may contain spaces; fields after the closing paren are fixed.
    return int(stat.rsplit(")", 1)[1].split()[1])


def _is_weaviate(pid: int) -> bool:
    try:
        return b"weaviate" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def check_data_dir_writable(data_dir: Path) -> None:
    """Raise IndexUnavailable naming the directory unless the server could write there."""
    existing = data_dir
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise IndexUnavailable(
            f"Weaviate data dir {data_dir} is not writable: fix its permissions or set RAGBOT_DATA_DIR"
        )


class WeaviateServer:
    """One local weaviate-server child process bound to loopback, with its data under `data_dir`."""

    def __init__(self, config: WeaviateServerConfig, *, log_to_terminal: bool = False) -> None:
        self.config = config
        self._log_to_terminal = log_to_terminal
        self._process: asyncio.subprocess.Process | None = None
        self._log_file: IO[bytes] | None = None
        self.endpoint: WeaviateEndpoint | None = None
        # The ports of the first start, kept for every later one: clients and Raft's own state name them.
        self._ports: list[int] | None = None
        self._supervisor: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self._process.pid if self._process and self._process.returncode is None else None

    def check(self) -> None:
        """Raise a clear error if the server cannot be started (binary, data dir)."""
        binary = self.config.binary
        if not binary.is_file() or not os.access(binary, os.X_OK):
            raise WeaviateBinaryMissing(str(binary))
        check_data_dir_writable(self.config.data_dir)

    async def start(self) -> WeaviateEndpoint:
        """Start the server and return once it reports ready."""
        self.check()
        data_dir = self.config.data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        await self._stop_orphan()
        self._ports = self._ports or free_ports(6, self.config.host)
        http_port, grpc_port, gossip, data, raft, raft_rpc = self._ports
        node = self._node_name()
        env = {
            **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TZ", "LANG")},
            "PERSISTENCE_DATA_PATH": str(data_dir),
            "CLUSTER_HOSTNAME": node,
            "CLUSTER_BIND_ADDR": self.config.host,
            "CLUSTER_GOSSIP_BIND_PORT": str(gossip),
            "CLUSTER_DATA_BIND_PORT": str(data),
            "RAFT_PORT": str(raft),
            "RAFT_INTERNAL_RPC_PORT": str(raft_rpc),
            "RAFT_JOIN": f"{node}:{raft_rpc}",
            "RAFT_BOOTSTRAP_EXPECT": "1",
            # One node elects itself: the default multiplier spends ~7 s of a 9 s start waiting for the election
            # (measured here); 1 is what Weaviate's own embedded mode uses for a single node.
            "RAFT_TIMEOUTS_MULTIPLIER": "1",
            "GRPC_PORT": str(grpc_port),
            **NODE_DEFAULTS,
        }
        args = [
            str(self.config.binary.resolve()),
            "--host",
            self.config.host,
            "--port",
            str(http_port),
            "--scheme",
            "http",
            "--read-timeout",
            "600s",
            "--write-timeout",
            "600s",
        ]
        output: int | IO[bytes] | None = None
        if not self._log_to_terminal:
            self._log_file = (data_dir / _LOG_FILE).open("ab")
            output = self._log_file
        self._process = await asyncio.create_subprocess_exec(
            *args,
            env=env,
            cwd=str(data_dir),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=output,
            stderr=asyncio.subprocess.STDOUT if output is not None else None,
            preexec_fn=_die_with_parent,
        )
        (data_dir / _PID_FILE).write_text(f"{self._process.pid} {os.getpid()}")
        log.info("weaviate=starting pid=%s http=%s grpc=%s node=%s", self._process.pid, http_port, grpc_port, node)
        endpoint = WeaviateEndpoint(
            self.config.host, http_port, False, self.config.host, grpc_port, False, server_pid=self._process.pid
        )
        try:
            await self._wait_ready(endpoint)
        except BaseException:
            await self._stop_process()  # not the supervisor: a restart that failed is tried again
            raise
        self.endpoint = endpoint
        (data_dir / _ENDPOINT_FILE).write_text(json.dumps({"http_port": http_port, "grpc_port": grpc_port}))
        return endpoint

    def attach_endpoint(self, error: ServerInUse) -> WeaviateEndpoint:
        """The endpoint of the server another live ragbot runs on this data dir (to share it, not own it)."""
        if not error.endpoint:
            raise error
        return WeaviateEndpoint(
            self.config.host,
            int(error.endpoint["http_port"]),
            False,
            self.config.host,
            int(error.endpoint["grpc_port"]),
            False,
            server_pid=int(error.endpoint["server_pid"]),
            owner_pid=int(error.endpoint["owner_pid"]),
        )

    def _read_endpoint(self) -> dict[str, int | str] | None:
        try:
            data = json.loads((self.config.data_dir / _ENDPOINT_FILE).read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    async def wait(self) -> int:
        """Wait for the server to exit and return its exit code."""
        if self._process is None:
            raise RuntimeError("server not started")
        return await self._process.wait()

    def supervise(self, restarted: Restarted) -> None:
        """Start the server again, on the same ports, whenever it exits unasked (killed, crashed, out of memory), and
        tell `restarted` each time; until `stop`. Calls meanwhile fail fast as the index being unavailable."""
        self._supervisor = asyncio.create_task(self._supervise(restarted), name="weaviate-supervisor")

    async def _supervise(self, restarted: Restarted) -> None:
        while (process := self._process) is not None:
            code = await process.wait()
            if self._process is not process:
                return  # stopped as asked
            log.warning("weaviate=exited pid=%s code=%s action=restart", process.pid, code)
            self._process, self.endpoint = None, None
            self._close_log()
            await self._restart()
            assert self.endpoint is not None
            try:
                await restarted(self.endpoint)
            except Exception:  # a background loop: the next exit must still be met
                log.exception("weaviate=restart_hook_failed pid=%s", self.endpoint.server_pid)

    async def _restart(self) -> None:
        for attempt in itertools.count():
            await asyncio.sleep(_RESTART_WAITS[min(attempt, len(_RESTART_WAITS) - 1)])
            try:
                endpoint = await self.start()
            except (StorageError, OSError) as exc:
                log.warning("weaviate=restart_failed attempt=%d reason=%s", attempt + 1, exc)
                continue
            log.warning("weaviate=restarted pid=%s attempt=%d", endpoint.server_pid, attempt + 1)
            return

    async def stop_supervising(self) -> None:
        """Start the server no more when it exits (a restart under way is cut)."""
        supervisor, self._supervisor = self._supervisor, None
        if supervisor is not None:
            supervisor.cancel()
            await asyncio.gather(supervisor, return_exceptions=True)

    async def stop(self) -> None:
        """Stop supervising, then the server: SIGTERM, then SIGKILL after a grace period."""
        await self.stop_supervising()
        await self._stop_process()

    async def _stop_process(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), _STOP_GRACE_SECONDS)
            except TimeoutError:
                log.warning("weaviate=kill pid=%s reason=no exit after SIGTERM", process.pid)
                process.kill()
                await process.wait()
        if process is not None:
            for name in (_PID_FILE, _ENDPOINT_FILE):
                (self.config.data_dir / name).unlink(missing_ok=True)
        self._close_log()
        self.endpoint = None

    def _close_log(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def _node_name(self) -> str:
        # Raft keys its persisted state on the node name, so it must stay the same for a data dir.
        path = self.config.data_dir / _NODE_NAME_FILE
        if path.exists():
            return path.read_text().strip()
        name = f"ragbot-{uuid.uuid4().hex[:12]}"
        path.write_text(name)
        return name

    def _recorded_pids(self) -> tuple[int, int] | None:
        """The server and owner pids of the pid file, or None when there is none (or it is unreadable)."""
        try:
            server_pid, owner_pid = (int(part) for part in (self.config.data_dir / _PID_FILE).read_text().split())
        except (FileNotFoundError, ValueError):
            return None
        return server_pid, owner_pid

    def in_use(self) -> ServerInUse | None:
        """Why another live ragbot holds this data dir (its server runs as that ragbot's child), or None; it only reads
        the pid file and /proc, so a command that must not run beside a server can ask without starting one."""
        pids = self._recorded_pids()
        if pids is None:
            return None
        server_pid, owner_pid = pids
        if not _process_alive(server_pid) or not _is_weaviate(server_pid) or owner_pid == os.getpid():
            return None
        if not _process_alive(owner_pid) or _parent_of(server_pid) != owner_pid:
            return None
        endpoint = self._read_endpoint()
        return ServerInUse(
            f"Weaviate data dir {self.config.data_dir} is in use by another ragbot (pid {owner_pid}): "
            "stop it or set RAGBOT_DATA_DIR to another folder",
            # Who runs the server travels with where it answers: sharers watch it and name its owner.
            {**endpoint, "server_pid": server_pid, "owner_pid": owner_pid} if endpoint else None,
            owner_pid,
        )

    async def _stop_orphan(self) -> None:
        pid_file = self.config.data_dir / _PID_FILE
        pids = self._recorded_pids()
        if pids is None:
            pid_file.unlink(missing_ok=True)
            return
        server_pid, _ = pids
        if not _process_alive(server_pid) or not _is_weaviate(server_pid):
            pid_file.unlink(missing_ok=True)
            return
        if (in_use := self.in_use()) is not None:
            raise in_use
        log.warning("weaviate=orphan pid=%s action=terminate", server_pid)
        os.kill(server_pid, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_GRACE_SECONDS
        # Not our child, so there is no wait() to await: poll until it is gone.
        while _process_alive(server_pid) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        if _process_alive(server_pid):
            os.kill(server_pid, signal.SIGKILL)
        pid_file.unlink(missing_ok=True)

    async def _wait_ready(self, endpoint: WeaviateEndpoint) -> None:
        url = f"{endpoint.http_url}/v1/.well-known/ready"
        deadline = time.monotonic() + self.config.startup_timeout
        timeout = aiohttp.ClientTimeout(total=2)
        async with aiohttp.ClientSession(timeout=timeout) as http:
            while time.monotonic() < deadline:
                if self._process is None or self._process.returncode is not None:
                    raise IndexUnavailable(f"weaviate-server exited during start-up; {self._log_tail()}")
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with http.get(url) as response:
                        if response.status == 200:
                            return
                await asyncio.sleep(0.2)
        raise IndexUnavailable(
            f"weaviate-server not ready after {self.config.startup_timeout:.0f}s "
            f"(raise WEAVIATE_STARTUP_TIMEOUT); {self._log_tail()}"
        )

    def _log_tail(self) -> str:
        path = self.config.data_dir / _LOG_FILE
        if self._log_to_terminal or not path.exists():
            return "see its output above"
        lines = path.read_text(errors="replace").strip().splitlines()
        return f"last log line: {lines[-1][:300]}" if lines else f"log: {path}"


def default_temp_data_dir() -> Path:
    """A throw-away data dir, for tests and `doctor` probes."""
    return Path(tempfile.mkdtemp(prefix="ragbot-weaviate-"))
