"""`ragbot serve` for the benchmarks: in a subprocess on a free port, with only the given settings, until ready."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bench.common import ROOT
from harness.processes import SETTINGS_PREFIXES, free_port, wait_until_ready

_SERVE_UNSET = (*SETTINGS_PREFIXES, "TELEGRAM_", "SLACK_")
# ragbot's log format (bot.cli.main): "date time LEVEL logger turn=ID message".
_WARNING = re.compile(r"^\S+ \S+ (WARNING|ERROR|CRITICAL) (\S+) turn=\S+ (\S+)")


def serve_env(values: dict[str, str]) -> dict[str, str]:
    """This process's environment without any setting of ragbot's or a chat platform's, then `values`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(_SERVE_UNSET)}
    env.update(values, PYTHONPATH=str(ROOT))
    return env


@asynccontextmanager
async def serving(
    env: dict[str, str], work: Path, module: str = "bot.cli.main"
) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """`ragbot serve` in a subprocess on a free port (output in WORK/serve.log), ready; stopped by SIGTERM after.

    `module` is what runs the command line (a debug wrapper of bot.cli.main, bench.soak_objects)."""
    port = free_port()
    with (work / "serve.log").open("ab") as output:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            module,
            "serve",
            env={**env, "RAGBOT_PORT": str(port), "LOG_LEVEL": "WARNING"},
            cwd=work,
            stdout=output,
            stderr=output,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        await wait_until_ready(url, process)
        yield url, process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 60)


def log_since(log: Path, offset: int) -> list[str]:
    """The lines `ragbot serve` wrote to its log from byte `offset` on."""
    with log.open("rb") as handle:
        handle.seek(offset)
        return handle.read().decode(errors="replace").splitlines()


def warning_key(line: str) -> str | None:
    """A WARNING-or-worse log line's level, logger and first word, to count such lines by; None for other lines."""
    match = _WARNING.match(line)
    return f"{match[1]} {match[2]} {match[3]}" if match else None
