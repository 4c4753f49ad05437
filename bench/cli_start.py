"""How long a person waits for the `ragbot` command: `--help`, and `ask` beside a running service.

Runs the installed console script (`.venv/bin/ragbot`) as a person would, in a fresh data dir on the embedded
defaults: a `demo` knowledge base of ragbot's own README and docs/*.md, then `ragbot serve` on it, so `ask` attaches to
the served Weaviate instead of starting one (what `make run` leaves a person with). For each command it records the
time from process start to the first byte on stdout and to the process's exit, over `--runs` runs after one
warm-up, the two commands taking turns so drift in the machine's speed hits both alike.

    .venv/bin/python -m bench.cli_start [--runs 15] [--save before.json] [--compare before.json]

`--save` writes the figures as JSON; `--compare` prints them beside an earlier saved run (before/after a change).
`--root DIR` runs the bot/rag/adapters/storage packages of a copy of the tree in DIR instead of this checkout's
(through PYTHONPATH, which comes before the editable install), so two versions can be timed with one venv.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.common import ROOT, machine, percentile

QUESTION = "How do I run the tests?"
RAGBOT = Path(sys.executable).parent / "ragbot"
COMMANDS: dict[str, list[str]] = {
    "ragbot --help": ["--help"],
    f'ragbot ask "{QUESTION}" --kb demo': ["ask", QUESTION, "--kb", "demo"],
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _environment(root: Path, data_dir: Path, port: int) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("RAGBOT_", "WEAVIATE_"))}
    env.update(
        RAGBOT_DATA_DIR=str(data_dir), RAGBOT_PORT=str(port), WEAVIATE_BINARY=str(ROOT / "bin" / "weaviate-server")
    )
    if root != ROOT:
        env["PYTHONPATH"] = str(root)
    shared = ROOT.parent / "shared"
    if "EMBEDDING_MODEL_DIR" not in env and (shared / "models" / "all-MiniLM-L6-v2-onnx").is_dir():
        env["EMBEDDING_MODEL_DIR"] = str(shared / "models" / "all-MiniLM-L6-v2-onnx")
    if "TIKTOKEN_CACHE_DIR" not in env and (shared / "tiktoken").is_dir():
        env["TIKTOKEN_CACHE_DIR"] = str(shared / "tiktoken")
    return env


def _run(env: dict[str, str], cwd: Path, *args: str) -> None:
    subprocess.run([str(RAGBOT), *args], env=env, cwd=cwd, check=True, capture_output=True)


def _wait_ready(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("ragbot serve exited during start-up")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise SystemExit("ragbot serve was not ready within 120 s")


def _time_once(env: dict[str, str], cwd: Path, args: list[str]) -> tuple[float, float]:
    """Seconds to the first byte on stdout and to the exit of one `ragbot ARGS`."""
    started = time.perf_counter()
    process = subprocess.Popen([str(RAGBOT), *args], env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None
    first = process.stdout.read(1)
    first_byte = time.perf_counter() - started
    _, stderr = process.communicate()
    finished = time.perf_counter() - started
    if process.returncode != 0 or not first:
        raise SystemExit(f"ragbot {' '.join(args)} failed ({process.returncode}): {stderr.decode()[-500:]}")
    return first_byte, finished


def measure(runs: int, root: Path = ROOT) -> dict[str, dict[str, list[float]]]:
    """First-byte and exit times of each command, `runs` each after one warm-up, beside a running service."""
    work = Path(tempfile.mkdtemp(prefix="ragbot-cli-start-"))
    port = _free_port()
    env = _environment(root, work / "data", port)
    _run(env, root, "kb", "create", "demo", "--description", "ragbot's own documentation")
    documents = ["README.md", *sorted(str(path.relative_to(root)) for path in (root / "docs").glob("*.md"))]
    _run(env, root, "ingest", *documents, "--kb", "demo")
    serve = subprocess.Popen(
        [str(RAGBOT), "serve"], env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    times: dict[str, dict[str, list[float]]] = {name: {"first_byte": [], "exit": []} for name in COMMANDS}
    try:
        _wait_ready(port, serve)
        for round_ in range(runs + 1):
            for name, args in COMMANDS.items():
                first_byte, finished = _time_once(env, root, args)
                if round_ > 0:  # the first round warms the page cache
                    times[name]["first_byte"].append(first_byte)
                    times[name]["exit"].append(finished)
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(60)
        shutil.rmtree(work, ignore_errors=True)
    return times


def _commit() -> str:
    """The checked-out commit, read from .git without running git (several people may be working in the tree)."""
    git = ROOT / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head[:7]
        ref = head.removeprefix("ref: ")
        if (git / ref).is_file():
            return (git / ref).read_text().strip()[:7]
        for line in (git / "packed-refs").read_text().splitlines():
            if line.endswith(f" {ref}"):
                return line[:7]
    except OSError:
        pass
    return "unknown"


def _summary(values: list[float]) -> str:
    return f"{percentile(values, 0.5):.2f} / {percentile(values, 0.95):.2f}"


def report(times: dict[str, dict[str, list[float]]], before: dict[str, dict[str, list[float]]] | None) -> str:
    """A markdown table: median / p95 seconds per command and figure, beside `before` when given."""
    runs = len(next(iter(times.values()))["exit"])
    lines = [f"{machine()}, commit {_commit()}, {runs} runs each (median / p95, seconds)", ""]
    if before is None:
        lines += ["| command | first byte | exit |", "| --- | ---: | ---: |"]
        for name, figures in times.items():
            lines.append(f"| `{name}` | {_summary(figures['first_byte'])} | {_summary(figures['exit'])} |")
    else:
        lines += [
            "| command | first byte, before | first byte, after | exit, before | exit, after |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for name, figures in times.items():
            old = before[name]
            lines.append(
                f"| `{name}` | {_summary(old['first_byte'])} | {_summary(figures['first_byte'])} "
                f"| {_summary(old['exit'])} | {_summary(figures['exit'])} |"
            )
    return "\n".join(lines)


def main() -> None:
    """Measure, print, and optionally save or compare."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--save", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--compare", type=Path, help="print beside the figures saved in this JSON file")
    parser.add_argument("--root", type=Path, default=ROOT, help="a copy of the tree whose packages to time")
    args = parser.parse_args()
    times = measure(args.runs, args.root.resolve())
    before = json.loads(args.compare.read_text()) if args.compare else None
    if args.save:
        args.save.write_text(json.dumps(times))
    print(report(times, before))


if __name__ == "__main__":
    main()
