"""Several `ragbot serve` on one PostgreSQL and one Weaviate, behind one haproxy, as issue 21 runs ragbot.

    async with running_instances(env, work_dir, count=2) as site:
        site.url                   # haproxy: round robin, no stickiness, checks GET /healthz
        site.instances[0].url      # one instance directly
        await site.kill("i0")      # kill -9, then wait until haproxy has taken it out

`env` names the shared parts (DATABASE_URL, WEAVIATE_URL), WEB_ACCESS_TOKEN and every other setting; each instance
gets its own RAGBOT_PORT, RAGBOT_INTERNAL_PORT and RAGBOT_DATA_DIR, as instances on separate hosts would. haproxy
forwards as a reverse proxy does (X-Forwarded-For/-Proto/-Host), so instances are public and trust it
(PROXIED_SETTINGS, unless `env` says otherwise): a browser opens `/?access=TOKEN` once, as behind any proxy.
Responses through haproxy name the instance that served them (SERVED_BY: "i0", "i1", ...).
"""

from __future__ import annotations

import asyncio
import csv
import shutil
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from harness.processes import free_port, wait_until_ready

SERVED_BY: Final = "X-Ragbot-Instance"
"""The response header haproxy sets to the name of the instance that served the request."""
SHARED_SETTINGS: Final = ("DATABASE_URL", "WEAVIATE_URL")
PROXIED_SETTINGS: Final = {"RAGBOT_PUBLIC": "true", "RAGBOT_TRUSTED_PROXIES": "127.0.0.1"}
"""What an instance behind haproxy is told by default: it is public, and haproxy's forwarding headers are true."""
_START_TIMEOUT: Final = 120.0
_STOP_TIMEOUT: Final = 60.0
_CHECK_INTERVAL_MS: Final = 500
_POLL: Final = 0.05
_STATS_ATTEMPTS: Final = 5
# An answer streams over server-sent events for as long as the model writes; haproxy's server and client
# timeouts count idle time, so they must outlast the slowest gap between two events of an answer.
_STREAM_IDLE: Final = "300s"


@dataclass(frozen=True, slots=True)
class Instance:
    """One `ragbot serve`: its name in haproxy, its own URLs (public; internal: /metrics, health details), its data
    dir and its log (stdout and stderr)."""

    name: str
    url: str
    internal_url: str
    data_dir: Path
    log: Path
    process: asyncio.subprocess.Process

    def log_text(self) -> str:
        """What it has logged so far."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    async def wait_logged(self, text: str, seconds: float = 30.0) -> None:
        """Wait until its log contains `text`; fail after `seconds` with the log's end."""

        async def logged() -> bool:
            return text in self.log_text()

        if not await poll(logged, seconds):
            raise AssertionError(f"{self.name} did not log {text!r} in {seconds}s:\n{self.log_text()[-3000:]}")


async def poll(check: Callable[[], Awaitable[bool]], seconds: float) -> bool:
    """Whether `check()` came true within `seconds`, asked every 50 ms: a log or haproxy's state has no event."""
    for _ in range(max(1, round(seconds / _POLL))):
        if await check():
            return True
        await asyncio.sleep(_POLL)
    return await check()


def _require_shared(env: Mapping[str, str]) -> None:
    missing = [name for name in (*SHARED_SETTINGS, "WEB_ACCESS_TOKEN") if not env.get(name)]
    if missing:
        raise ValueError(f"instances share one database and one Weaviate behind a proxy: set {', '.join(missing)}")


async def start_instance(env: Mapping[str, str], work_dir: Path, name: str) -> Instance:
    """Start `ragbot serve` with `env`, its own port and data dir under `work_dir`, and wait until it is ready.

    Fails (AssertionError with its log) when it exits or is not ready in 120 s; see `start_refused` for an
    instance that is meant not to start.
    """
    process, instance = await _spawn(env, work_dir, name)
    try:
        await wait_until_ready(instance.url, process)
    except AssertionError as exc:
        await stop_instance(instance)
        raise AssertionError(f"{name}: {exc}; its log ends:\n{instance.log_text()[-3000:]}") from None
    return instance


async def start_refused(env: Mapping[str, str], work_dir: Path, name: str) -> tuple[int, str]:
    """Start `ragbot serve` that should refuse to start: its exit code and log once it exits (120 s at most)."""
    process, instance = await _spawn(env, work_dir, name)
    try:
        await asyncio.wait_for(process.wait(), _START_TIMEOUT)
    except TimeoutError:
        await stop_instance(instance)
        raise AssertionError(f"{name} did not exit in {_START_TIMEOUT}s:\n{instance.log_text()[-3000:]}") from None
    assert process.returncode is not None
    return process.returncode, instance.log_text()


async def _spawn(env: Mapping[str, str], work_dir: Path, name: str) -> tuple[asyncio.subprocess.Process, Instance]:
    _require_shared(env)
    data_dir = work_dir / name
    data_dir.mkdir(parents=True, exist_ok=True)
    port, internal = free_port(), free_port()
    own = {"RAGBOT_PORT": str(port), "RAGBOT_INTERNAL_PORT": str(internal), "RAGBOT_DATA_DIR": str(data_dir)}
    log = work_dir / f"{name}.log"
    with log.open("wb") as output:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli.main",
            "serve",
            env={**PROXIED_SETTINGS, **env, **own},
            cwd=work_dir,
            stdout=output,
            stderr=output,
        )
    urls = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{internal}"
    return process, Instance(name, *urls, data_dir, log, process)


async def stop_instance(instance: Instance) -> None:
    """SIGTERM and wait for it to stop as `ragbot serve` does (answers in flight finish); SIGKILL after 60 s."""
    process = instance.process
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), _STOP_TIMEOUT)
        except TimeoutError:
            process.kill()
            await process.wait()


def haproxy_config(port: int, backends: Mapping[str, str], stats_socket: Path) -> str:
    """haproxy's configuration: HTTP mode, round robin over `backends` (name -> host:port), no stickiness."""
    servers = "\n".join(
        f"    server {name} {address} check inter {_CHECK_INTERVAL_MS} fall 2 rise 1"
        for name, address in backends.items()
    )
    return f"""global
    stats socket {stats_socket} mode 600 level admin

defaults
    mode http
    timeout connect 5s
    timeout client {_STREAM_IDLE}
    timeout server {_STREAM_IDLE}
    timeout http-request 30s

frontend ragbot
    bind 127.0.0.1:{port}
    default_backend instances

backend instances
    balance roundrobin
    option forwardfor
    http-request set-header X-Forwarded-Proto http
    http-request set-header X-Forwarded-Host %[req.hdr(host)]
    option httpchk GET /healthz
    http-check expect status 200
    http-response set-header {SERVED_BY} %[srv_name]
{servers}
"""


def haproxy_binary() -> str:
    """Debian's haproxy (`make haproxy`)."""
    found = shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").is_file() else None)
    if found is None:
        raise RuntimeError("haproxy not found: run `make haproxy` (Debian package haproxy)")
    return found


class Haproxy:
    """haproxy in the foreground as a child process, with its stats socket to read and change servers' states."""

    def __init__(self, process: asyncio.subprocess.Process, url: str, socket: Path, log: Path) -> None:
        self.process = process
        self.url = url
        self._socket = socket
        self.log = log

    async def command(self, line: str) -> str:
        """One command on the stats socket (`show stat`, `disable server instances/i0`, ...): its answer.

        A busy haproxy sometimes drops a stats connection before reading it (CI saw ENOTCONN mid-drill); every
        command the harness sends is idempotent, so it is sent again on a fresh connection.
        """
        for attempt in range(_STATS_ATTEMPTS):
            try:
                return await self._command_once(line)
            except OSError:
                if attempt == _STATS_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(_POLL)
        raise AssertionError("unreachable")

    async def _command_once(self, line: str) -> str:
        reader, writer = await asyncio.open_unix_connection(str(self._socket))
        try:
            writer.write(line.encode() + b"\n")
            await writer.drain()
            return (await reader.read()).decode()
        finally:
            writer.close()
            with suppress(OSError):
                await writer.wait_closed()

    async def wait_started(self) -> None:
        """Wait until haproxy has opened its stats socket; fail if it exits or 30 s pass."""

        async def started() -> bool:
            if self.process.returncode is not None:
                raise AssertionError(f"haproxy exited: {self.log.read_text()[-2000:]}")
            return self._socket.exists()

        if not await poll(started, 30):
            raise AssertionError(f"haproxy did not open its stats socket in 30s: {self.log.read_text()[-2000:]}")

    async def states(self) -> dict[str, str]:
        """Each instance's state as haproxy sees it: "UP", "DOWN", "UP 1/2" (going down), ..."""
        rows = csv.DictReader((await self.command("show stat")).removeprefix("# ").splitlines())
        servers = [row for row in rows if row["pxname"] == "instances" and row["svname"] not in ("FRONTEND", "BACKEND")]
        return {row["svname"]: row["status"] for row in servers}

    async def wait_state(self, name: str, state: str, seconds: float = 30.0) -> None:
        """Wait until haproxy reports instance `name` in `state` ("UP" or "DOWN")."""

        async def reached() -> bool:
            return (await self.states()).get(name) == state

        if not await poll(reached, seconds):
            raise AssertionError(f"haproxy did not see {name} {state} in {seconds}s: {await self.states()}")


@asynccontextmanager
async def running_haproxy(
    backends: Mapping[str, str], work_dir: Path, port: int | None = None
) -> AsyncIterator[Haproxy]:
    """haproxy on `port` (a free one by default) before `backends` (name -> host:port), each UP when yielded."""
    port = port or free_port()
    config, socket, log = work_dir / "haproxy.cfg", work_dir / "haproxy.sock", work_dir / "haproxy.log"
    config.write_text(haproxy_config(port, backends, socket))
    with log.open("wb") as output:
        # -db: stay in the foreground, so haproxy is this child process and stops with it.
        process = await asyncio.create_subprocess_exec(
            haproxy_binary(), "-db", "-f", str(config), stdout=output, stderr=output
        )
    proxy = Haproxy(process, f"http://127.0.0.1:{port}", socket, log)
    try:
        await proxy.wait_started()
        for name in backends:
            await proxy.wait_state(name, "UP")
        yield proxy
    finally:
        if process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), _STOP_TIMEOUT)


@dataclass
class Instances:
    """Instances of `ragbot serve` behind haproxy: `url` is haproxy's; `instances` are reachable directly too."""

    instances: list[Instance]
    haproxy: Haproxy
    work_dir: Path

    @property
    def url(self) -> str:
        """haproxy's URL: requests go round robin over the live instances."""
        return self.haproxy.url

    def named(self, name: str) -> Instance:
        """The instance haproxy calls `name` (a SERVED_BY value)."""
        return next(instance for instance in self.instances if instance.name == name)

    async def kill(self, name: str) -> None:
        """kill -9 the instance haproxy calls `name` (no shutdown of any kind); return once haproxy took it out."""
        instance = self.named(name)
        if instance.process.returncode is None:
            instance.process.kill()
            await instance.process.wait()
        await self.haproxy.wait_state(instance.name, "DOWN")

    def logs(self) -> str:
        """Every instance's log, headed by its name: for a failing test's message."""
        return "\n".join(f"--- {instance.name}\n{instance.log_text()[-3000:]}" for instance in self.instances)


@asynccontextmanager
async def running_instances(
    env: Mapping[str, str], work_dir: Path, *, count: int = 2, proxy_port: int | None = None
) -> AsyncIterator[Instances]:
    """Start `count` instances of `ragbot serve` (named i0, i1, ...) on `env` and haproxy before them; stop all.

    `proxy_port` is haproxy's port when a setting must name its URL before it starts (a Telegram webhook's).

    They start one after another: the first migrates the database, and each would otherwise compete for the
    few cores while loading its models. Stopping is the reverse: haproxy first, then each instance by SIGTERM.
    """
    async with AsyncExitStack() as stack:
        instances: list[Instance] = []
        for index in range(count):
            instance = await start_instance(env, work_dir, f"i{index}")
            stack.push_async_callback(stop_instance, instance)
            instances.append(instance)
        backends = {instance.name: instance.url.removeprefix("http://") for instance in instances}
        proxy = await stack.enter_async_context(running_haproxy(backends, work_dir, proxy_port))
        yield Instances(instances, proxy, work_dir)
