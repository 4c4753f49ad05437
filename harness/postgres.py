"""A throw-away PostgreSQL cluster on loopback, from the Debian server binaries."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import asyncpg

_USER = "ragbot"


def _find_binary(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}")) or (
        [shutil.which(name)] if shutil.which(name) else []
    )
    if not found:
        raise RuntimeError(f"PostgreSQL's {name} not found: run `make postgres` (Debian package postgresql)")
    return str(found[-1])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user(args: list[str], home: Path) -> list[str]:
    # initdb and postgres refuse to run as root; Debian's package creates the postgres user.
    if os.geteuid() != 0:
        return args
    account = pwd.getpwnam("postgres")
    os.chown(home, account.pw_uid, account.pw_gid)
    for path in home.rglob("*"):
        os.chown(path, account.pw_uid, account.pw_gid)
    return ["runuser", "-u", "postgres", "--", *args]


class PostgresCluster:
    """A throw-away cluster on loopback: started on a free port, restartable on the same data and port, removed."""

    def __init__(self, settings: Mapping[str, str] | None = None) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="ragbot-pg-"))
        self.port = _free_port()
        self._settings = dict(settings or {})
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        """Its base URL (no database name)."""
        return f"postgresql://{_USER}@127.0.0.1:{self.port}"

    def create(self) -> None:
        """Make the cluster (initdb) and start it."""
        data = self.home / "data"
        initdb = [_find_binary("initdb"), "-D", str(data), "-U", _USER, "--auth=trust", "-E", "UTF8", "--no-sync"]
        subprocess.run(_as_server_user(initdb, self.home), check=True, capture_output=True)
        self._log = (self.home / "server.log").open("ab")
        self.start()

    def start(self) -> None:
        """Start the server on the cluster's data and port, and return once it takes connections."""
        server_args = [
            _find_binary("postgres"),
            "-D",
            str(self.home / "data"),
            "-p",
            str(self.port),
            "-k",
            str(self.home),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "max_connections=200",
            *(part for name, value in self._settings.items() for part in ("-c", f"{name}={value}")),
        ]
        command = _as_server_user(server_args, self.home)
        self._process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)
        _wait_ready(self.port, self._process, self.home)

    def stop(self, *, fast: bool = False) -> None:
        """Stop the server: smart (SIGTERM), or `fast` (`pg_ctl stop -m fast`: every session is ended)."""
        process, self._process = self._process, None
        if process is None:
            return
        if fast:
            # pg_ctl signals the postmaster itself: runuser, when it runs the server, passes on SIGTERM only.
            pg_ctl = [_find_binary("pg_ctl"), "stop", "-D", str(self.home / "data"), "-m", "fast", "-w"]
            subprocess.run(_as_server_user(pg_ctl, self.home), check=True, capture_output=True)
        else:
            process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def restart(self) -> None:
        """What `pg_ctl restart` does (its default mode is fast): every session ended, the server started again."""
        self.stop(fast=True)
        self.start()

    def remove(self) -> None:
        """Stop the server and delete the cluster."""
        self.stop()
        if self._log is not None:
            self._log.close()
        shutil.rmtree(self.home, ignore_errors=True)


@contextmanager
def postgres_cluster(settings: Mapping[str, str] | None = None) -> Iterator[PostgresCluster]:
    """A started cluster, removed afterwards. `settings` are more server settings (`-c name=value`)."""
    cluster = PostgresCluster(settings)
    try:
        cluster.create()
        yield cluster
    finally:
        cluster.remove()


@contextmanager
def running_postgres(settings: Mapping[str, str] | None = None) -> Iterator[str]:
    """Start a cluster, yield its base URL (no database name), remove it afterwards.

    `settings` are more server settings (`-c name=value`), e.g. shared_preload_libraries for a benchmark.
    """
    with postgres_cluster(settings) as cluster:
        yield cluster.url


def _wait_ready(port: int, process: subprocess.Popen[bytes], home: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"postgres exited: {(home / 'server.log').read_text()[-2000:]}")
        ready = subprocess.run([_find_binary("pg_isready"), "-h", "127.0.0.1", "-p", str(port)], capture_output=True)
        if ready.returncode == 0:
            return
        time.sleep(0.2)
    raise RuntimeError("postgres did not become ready in 60s")


async def create_database(base_url: str, prefix: str = "t") -> str:
    """A new, empty database on the cluster at `base_url` (no database part), named `prefix` and a random tag: its
    URL."""
    name = f"{prefix}_{uuid.uuid4().hex[:16]}"
    connection = await asyncpg.connect(f"{base_url}/postgres")
    try:
        await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()
    return f"{base_url}/{name}"
