"""A throw-away Neo4j Community server on a free loopback port, from the jars `make neo4j` copies to bin/neo4j/lib."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO

from harness.processes import free_port, stop_process

# What Neo4j prints on its console once Bolt takes connections and the default database is up.
_STARTED = "Started."
_START_TIMEOUT = 180.0
_STOP_GRACE_SECONDS = 30.0


class Neo4jServer:
    """One Neo4j on loopback with auth off: started on a free port, stopped and removed."""

    def __init__(self, home: Path) -> None:
        self._jars = home / "lib"
        self.home = Path(tempfile.mkdtemp(prefix="ragbot-neo4j-"))
        self.port = free_port()
        self.started_in: float | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._log: IO[str] | None = None
        self._reader: asyncio.Task[None] | None = None

    @property
    def uri(self) -> str:
        """Its Bolt URI, as NEO4J_URI names it."""
        return f"bolt://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Start the server and return once it reports Bolt enabled and the database started."""
        if not any(self._jars.glob("neo4j-*.jar")):
            raise RuntimeError(f"no Neo4j jars in {self._jars}: run `make neo4j`")
        java = shutil.which("java")
        if java is None:
            raise RuntimeError("java not found: Neo4j needs Java 17 or later")
        began = time.monotonic()
        self._log = (self.home / "console.log").open("a")
        self._process = await asyncio.create_subprocess_exec(
            java,
            "-Xmx512m",
            "-cp",
            f"{self._jars}/*",
            "org.neo4j.server.CommunityEntryPoint",
            f"--home-dir={self.home}",
            "--console-mode",
            *_settings(self.port),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        started = asyncio.Event()
        assert self._process.stdout is not None
        self._reader = asyncio.create_task(_copy_console(self._process.stdout, self._log, started))
        exited = asyncio.create_task(self._process.wait())
        ready = asyncio.create_task(started.wait())
        done, _ = await asyncio.wait({exited, ready}, timeout=_START_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
        for task in (exited, ready):
            if task not in done:
                task.cancel()
        if ready not in done:
            await self.stop()
            reason = "exited" if exited in done else f"did not start within {_START_TIMEOUT:.0f} s"
            raise RuntimeError(f"neo4j {reason}; see {self.home / 'console.log'}")
        self.started_in = time.monotonic() - began

    async def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after a grace period)."""
        process, self._process = self._process, None
        if process is not None:
            await stop_process(process, _STOP_GRACE_SECONDS)
        if self._reader is not None:
            await self._reader
            self._reader = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def remove(self) -> None:
        """Delete its data (once stopped)."""
        shutil.rmtree(self.home, ignore_errors=True)


async def _copy_console(console: asyncio.StreamReader, log: IO[str], started: asyncio.Event) -> None:
    """Copy the server's console to its log, and note the line that says it is up."""
    async for raw in console:
        line = raw.decode(errors="replace")
        log.write(line)
        if line.rstrip().endswith(_STARTED):
            log.flush()
            started.set()


def _settings(port: int) -> list[str]:
    settings = {
        "server.bolt.listen_address": f"127.0.0.1:{port}",
        "server.bolt.advertised_address": f"127.0.0.1:{port}",
        "dbms.security.auth_enabled": "false",
        # It would otherwise report its use to Neo4j over the network.
        "dbms.usage_report.enabled": "false",
        # Bolt only: several test workers each run one, and the HTTP ports would collide.
        "server.http.enabled": "false",
        "server.https.enabled": "false",
        "server.memory.pagecache.size": "64m",
    }
    return [arg for name, value in settings.items() for arg in ("-c", f"{name}={value}")]


@asynccontextmanager
async def running_neo4j(home: Path) -> AsyncIterator[Neo4jServer]:
    """A started Neo4j from the jars under `home`, stopped and removed on exit."""
    server = Neo4jServer(home)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
        server.remove()
