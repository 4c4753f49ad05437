"""--instances of bench.concurrency: the web chat's bursts against N `ragbot serve` behind haproxy (issue 21).

Per size: a fresh database on a throw-away PostgreSQL (pg_stat_statements loaded), a fresh three-node Weaviate
cluster (harness/weaviate_cluster.py; replication factor 3, QUORUM), the knowledge base made by `ragbot kb create`
and `ragbot ingest`, then max(N) instances and haproxy before them (harness/instances.py, round robin). A run of n
instances takes the others out of haproxy (`disable server`): they stay up and idle, their CPU is reported apart,
so every n runs on the same processes and data. Each round runs one burst per n, the order reversed every other
round (1, 2, 2, 1, ...), so drift in the shared machine's speed hits each n alike.

The clients are (b)'s (bench/concurrency_web.py): each its own cookie jar, opening `/?access=TOKEN` once as a browser
does, then posting its question and reading the server-sent events, all through haproxy. Per burst, beside what (b)
measures: the serving instances' CPU seconds (/proc/PID/stat, summed) and each one's RSS peak (VmHWM reset before),
the posts each served (X-Ragbot-Instance), the PostgreSQL server's CPU (postmaster and backends) with the statements
and execution time pg_stat_statements counted in the database, and the three Weaviate nodes' CPU.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import aiohttp
import asyncpg

from bench.bursts import analyse, run_all
from bench.concurrency_web import ask
from bench.conversations import DOCUMENT, DOCUMENT_NAME, KB, RUN_TIMEOUT, known_answer
from bench.figures import Figures, Memory, Seen, merge_runs
from bench.log_counts import LogTally, tally_log
from bench.log_counts import total as total_tally
from bench.model_process import ModelProcess
from bench.process_stats import LoopLag, process_cpu, reset_peak, status_mb
from bench.report import ms_at, spread, top
from bench.serving import serve_env
from harness.instances import SERVED_BY, Instance, Instances, running_instances
from harness.processes import run_ragbot
from harness.weaviate_cluster import WeaviateCluster, running_cluster

ACCESS_TOKEN = "bench-instances-access-token-0123456789abcdef"
# Long enough to see the instances' periodic work (presence and leases renew every few seconds).
_IDLE_SECONDS = 20.0
POSTGRES_SETTINGS = {"shared_preload_libraries": "pg_stat_statements"}
# Each statement of the run's database so far (pg_stat_statements normalises constants away): calls, ms.
_STATEMENTS = """
SELECT query, calls, total_exec_time FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
"""
_TRANSACTION = ("BEGIN", "COMMIT", "ROLLBACK")


@dataclass
class InstanceFigures(Figures):
    """A burst (or merged bursts) on `instances` instances: Figures, and the CPU and memory of every part."""

    rows: ClassVar[list[tuple[str, Callable[[Any], str]]]]
    instances: int = 0
    # Per serving instance (i0, i1, ...): CPU seconds and peak RSS (MB) of each burst.
    instance_cpu: dict[str, list[float]] = field(default_factory=dict)
    instance_peak: dict[str, list[float]] = field(default_factory=dict)
    served: Counter[str] = field(default_factory=Counter)
    # CPU seconds of the instances out of haproxy (idle), of the PostgreSQL server and of the three Weaviate nodes.
    idle_cpu: float = 0.0
    postgres_cpu: float = 0.0
    weaviate_cpu: float = 0.0
    # pg_stat_statements in the run's database: statements, of them BEGIN/COMMIT/ROLLBACK, execution ms.
    statements: int = 0
    transaction_statements: int = 0
    statement_ms: float = 0.0
    # The same per statement (its text, shortened): calls and execution time in µs.
    statement_calls: Counter[str] = field(default_factory=Counter)
    statement_us: Counter[str] = field(default_factory=Counter)


def _per_turn_ms(seconds: float, figures: Figures) -> str:
    return f"{seconds / figures.conversations * 1000:.0f}" if figures.conversations else "n/a"


def turns_per_second(figures: Figures) -> float:
    """Finished turns (final delivered exact) per second of burst wall."""
    return figures.exact / figures.wall if figures.wall else math.nan


def _each(values: dict[str, list[float]], digits: int = 0) -> str:
    return "; ".join(f"{name} " + ", ".join(f"{v:.{digits}f}" for v in runs) for name, runs in sorted(values.items()))


def _statements(f: InstanceFigures) -> str:
    if not f.conversations:
        return "n/a"
    return f"{f.statements / f.conversations:.1f} ({f.transaction_statements / f.conversations:.1f})"


InstanceFigures.rows = [
    ("first visible sign after the event, p50 / p95 (ms)", lambda f: spread(f.first_sign)),
    ("first answer text minus the model's TTFT, p50 / p95 (ms)", lambda f: spread(f.first_visible)),
    ("... p50 of each burst (ms)", lambda f: ", ".join(ms_at(run.first_visible, 0.5) for run in f.repeats or [f])),
    ("turn start -> request at the model, p50 / p95 (ms)", lambda f: spread(f.to_model)),
    ("model token -> visible, p50 / p95 (ms)", lambda f: spread(f.lags)),
    ("finals delivered exact", lambda f: f"{f.exact} / {f.conversations}"),
    ("lost finals (model done, final not delivered exact)", lambda f: str(f.lost)),
    ("failed turns (apology or no answer)", lambda f: str(f.failed)),
    ("instances' CPU per turn, summed (ms)", lambda f: _per_turn_ms(f.cpu_seconds, f)),
    ("instances' CPU s / wall s of the bursts", lambda f: f"{f.cpu_seconds:.1f} / {f.wall:.1f}"),
    ("... CPU s of each instance, each burst", lambda f: _each(f.instance_cpu, 1)),
    ("turns per second (exact finals / burst wall)", lambda f: f"{turns_per_second(f):.1f}"),
    ("... of each burst", lambda f: ", ".join(f"{turns_per_second(run):.1f}" for run in f.repeats or [f])),
    ("peak RSS of each instance, each burst (MB)", lambda f: _each(f.instance_peak)),
    ("posts served per instance", lambda f: top(f.served, 4)),
    ("idle instances' CPU s (out of haproxy)", lambda f: f"{f.idle_cpu:.1f}"),
    ("PostgreSQL server CPU per turn (ms)", lambda f: _per_turn_ms(f.postgres_cpu, f)),
    ("PostgreSQL statements per turn (of them BEGIN/COMMIT)", _statements),
    ("PostgreSQL execution time per turn (ms)", lambda f: _per_turn_ms(f.statement_ms / 1000, f)),
    ("Weaviate CPU per turn, 3 nodes summed (ms)", lambda f: _per_turn_ms(f.weaviate_cpu, f)),
    ("bench event-loop lag p50 / p95 / max (ms)", lambda f: f"{spread(f.loop_lag)} / {ms_at(f.loop_lag, 1.0)}"),
    ("pool timeouts (log records)", lambda f: str(f.pool_timeouts)),
    ("instances' WARNING+ records", lambda f: top(f.warnings, 3)),
]


def _cpu(pids: Iterable[int]) -> dict[int, float]:
    """CPU seconds so far of each process still alive."""
    seconds = {}
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            seconds[pid] = process_cpu(pid)
    return seconds


def _used(before: Mapping[int, float], after: Mapping[int, float]) -> float:
    """CPU seconds used between two readings; a process started in between counts from 0."""
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def postgres_pids(port: int) -> list[int]:
    """The PostgreSQL server listening on `port`: its postmaster and the postmaster's children (backends, workers)."""
    postmaster, everyone = None, []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            everyone.append(int(entry.name))
            listening = b"-p" in argv and argv[argv.index(b"-p") + 1] == str(port).encode()
            if Path(argv[0].decode()).name == "postgres" and listening:
                postmaster = int(entry.name)
    if postmaster is None:
        return []
    children = []
    for pid in everyone:
        with contextlib.suppress(OSError, ValueError):
            if _parent(pid) == postmaster:
                children.append(pid)
    return [postmaster, *children]


@dataclass(frozen=True, slots=True)
class Backing:
    """What the instances share: the database (its URL, its server's port) and the Weaviate cluster."""

    database_url: str
    postgres_port: int
    cluster: WeaviateCluster


class InstancesScenario:
    """SSE clients of the web chat through haproxy, and the readings of every process around a burst."""

    def __init__(self, site: Instances, backing: Backing, statements: asyncpg.Connection) -> None:
        self._site = site
        self._backing = backing
        self._statements = statements
        self._connector = aiohttp.TCPConnector(limit=0)
        self._sessions: dict[int, aiohttp.ClientSession] = {}
        self.serving: list[Instance] = list(site.instances)
        self.served: Counter[str] = Counter()

    async def use(self, count: int) -> None:
        """Keep the first `count` instances in haproxy and take the others out (they keep running, idle)."""
        proxy = self._site.haproxy
        self.serving = self._site.instances[:count]
        for index, instance in enumerate(self._site.instances):
            action, state = ("enable", "UP") if index < count else ("disable", "MAINT")
            await proxy.command(f"{action} server instances/{instance.name}")
            await proxy.wait_state(instance.name, state)

    async def prepare(self, numbers: list[int]) -> None:
        """A browser per conversation opens the access link once (its cookies: access and session)."""
        url = self._site.url
        for number in numbers:
            self._sessions[number] = aiohttp.ClientSession(
                connector=self._connector,
                connector_owner=False,
                cookie_jar=aiohttp.CookieJar(unsafe=True),  # cookies for 127.0.0.1 (an IP) are kept only when unsafe
                timeout=aiohttp.ClientTimeout(total=RUN_TIMEOUT),
            )

        async def open_page(session: aiohttp.ClientSession) -> None:
            async with session.get(f"{url}/", params={"access": ACCESS_TOKEN}) as response:
                response.raise_for_status()

        await asyncio.gather(*(open_page(self._sessions[number]) for number in numbers))

    async def converse(self, person: Seen) -> None:
        """One conversation: its question posted through haproxy, the answer read, the serving instance counted."""
        session = self._sessions.pop(person.number)
        try:
            headers = await ask(self._site.url, session, person)
            self.served[headers.get(SERVED_BY, "?")] += 1
        finally:
            await session.close()

    async def close(self) -> None:
        """Close every client."""
        for session in self._sessions.values():
            await session.close()
        await self._connector.close()

    async def _statement_counts(self) -> dict[str, tuple[int, float]]:
        counts: dict[str, tuple[int, float]] = {}
        for query, calls, ms in await self._statements.fetch(_STATEMENTS):
            text = " ".join(str(query).split())[:110]
            before = counts.get(text, (0, 0.0))
            counts[text] = (before[0] + int(calls), before[1] + float(ms))
        return counts

    async def _count_statements(self, figures: InstanceFigures, before: dict[str, tuple[int, float]]) -> None:
        """The statements since `before` into `figures`, the bench's own reading (one) left out."""
        for text, (calls, ms) in (await self._statement_counts()).items():
            then = before.get(text, (0, 0.0))
            if calls > then[0]:
                figures.statement_calls[text] += calls - then[0]
                figures.statement_us[text] += round((ms - then[1]) * 1000)
        figures.statement_calls[" ".join(_STATEMENTS.split())[:110]] -= 1
        figures.statement_calls = +figures.statement_calls
        figures.statements = sum(figures.statement_calls.values())
        figures.transaction_statements = sum(
            calls for text, calls in figures.statement_calls.items() if text.upper().startswith(_TRANSACTION)
        )
        figures.statement_ms = sum(figures.statement_us.values()) / 1000

    async def idle(self, seconds: float) -> InstanceFigures:
        """What every part spends with no conversation at all for `seconds` (presence, leases, job polling)."""
        counted, readings = await self._statement_counts(), self._readings()
        await asyncio.sleep(seconds)
        after = self._readings()
        figures = InstanceFigures("idle", 0, instances=len(self._site.instances), wall=seconds)
        figures.cpu_seconds = _used(readings[0], after[0]) + _used(readings[1], after[1])
        figures.postgres_cpu, figures.weaviate_cpu = _used(readings[2], after[2]), _used(readings[3], after[3])
        await self._count_statements(figures, counted)
        return figures

    def _readings(self) -> tuple[dict[int, float], dict[int, float], dict[int, float], dict[int, float]]:
        serving = {instance.process.pid for instance in self.serving}
        idle = {instance.process.pid for instance in self._site.instances} - serving
        return (
            _cpu(serving),
            _cpu(idle),
            _cpu(postgres_pids(self._backing.postgres_port)),
            _cpu(self._backing.cluster.pids().values()),
        )

    async def burst(self, name: str, fake: ModelProcess, numbers: list[int]) -> InstanceFigures:
        """Start one conversation per number at once through haproxy and measure them and every process."""
        await self.prepare(numbers)
        await fake.reset()
        seen = [Seen(number) for number in numbers]
        marks = {instance.name: instance.log.stat().st_size for instance in self.serving}
        before = {instance.name: status_mb(instance.process.pid, "VmRSS") for instance in self.serving}
        for instance in self.serving:
            reset_peak(instance.process.pid)
        self.served.clear()
        counted = await self._statement_counts()
        lag = LoopLag()
        lag.start()
        readings, started = self._readings(), time.monotonic()
        await run_all(self.converse, seen)
        wall, after = time.monotonic() - started, self._readings()
        await lag.stop()
        figures = InstanceFigures(name, len(seen), instances=len(self.serving), wall=wall, loop_lag=lag.delays)
        await self._count_statements(figures, counted)
        figures.cpu_seconds = _used(readings[0], after[0])
        figures.idle_cpu, figures.postgres_cpu, figures.weaviate_cpu = (
            _used(readings[part], after[part]) for part in (1, 2, 3)
        )
        for instance in self.serving:
            pid = instance.process.pid
            figures.instance_cpu[instance.name] = [after[0].get(pid, 0.0) - readings[0].get(pid, 0.0)]
            figures.instance_peak[instance.name] = [status_mb(pid, "VmHWM")]
        largest = max(self.serving, key=lambda instance: figures.instance_peak[instance.name][0])
        peak = figures.instance_peak[largest.name][0]
        figures.memory = Memory(before[largest.name], peak, peak, "the largest `ragbot serve`")
        figures.served = Counter(self.served)
        await fake.collect()
        logged = total_tally([tally_log(instance.log, marks[instance.name]) for instance in self.serving])
        _add_log(figures, logged)
        analyse(figures, seen, fake, known_answer, edited=False)
        return figures


def _add_log(figures: Figures, logged: LogTally) -> None:
    figures.locked, figures.pool_timeouts, figures.warnings = logged.locked, logged.pool_timeouts, logged.warnings


def instance_settings(values: Mapping[str, str], backing: Backing) -> dict[str, str]:
    """`ragbot serve`'s settings for every instance: `values`, the shared database and cluster, the access token."""
    settings = {key: value for key, value in values.items() if key not in ("RAGBOT_DATA_DIR", "WEAVIATE_BINARY")}
    settings.update(
        DATABASE_URL=backing.database_url,
        WEAVIATE_URL=backing.cluster.http_urls,
        WEAVIATE_GRPC_URL=backing.cluster.grpc_urls,
        WEAVIATE_REPLICATION_FACTOR="3",
        WEAVIATE_CONSISTENCY="QUORUM",
        WEB_ACCESS_TOKEN=ACCESS_TOKEN,
        LOG_LEVEL="WARNING",
    )
    return serve_env(settings)


async def _knowledge_base(env: dict[str, str], work: Path) -> None:
    """The handbook's knowledge base, made with the CLI as an operator would."""
    cli = {**env, "RAGBOT_DATA_DIR": str(work / "cli")}
    (work / DOCUMENT_NAME).write_text(DOCUMENT)
    for args in (("kb", "create", KB), ("ingest", DOCUMENT_NAME, "--kb", KB)):
        code, out, err = await run_ragbot(cli, work, *args)
        if code != 0:
            raise SystemExit(f"`ragbot {' '.join(args)}` failed ({code}): {out[-1000:]} {err[-2000:]}")


@dataclass(frozen=True, slots=True)
class InstancePlan:
    """One size: conversations a burst, rounds, and the instance counts each round runs (in this order first)."""

    conversations: int
    rounds: int
    counts: tuple[int, ...]


async def instances_run(
    label: str, values: Mapping[str, str], fake: ModelProcess, plan: InstancePlan, work: Path, binary: Path, base: str
) -> list[Figures]:
    """One size on a fresh cluster and database: a warm-up, one turn alone per count, then the paired rounds."""
    database_url = values["DATABASE_URL"]
    port = int(base.rsplit(":", 1)[1])
    statements = await asyncpg.connect(database_url)
    try:
        await statements.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        async with running_cluster(binary, work / "weaviate") as cluster:
            backing = Backing(database_url, port, cluster)
            env = instance_settings(values, backing)
            await _knowledge_base(env, work)
            async with running_instances(env, work / "instances", count=max(plan.counts)) as site:
                scenario = InstancesScenario(site, backing, statements)
                try:
                    return await _rounds(label, scenario, fake, plan)
                finally:
                    await scenario.close()
    finally:
        await statements.close()


async def _rounds(label: str, scenario: InstancesScenario, fake: ModelProcess, plan: InstancePlan) -> list[Figures]:
    await scenario.use(max(plan.counts))
    # Two turns per instance at least, so every one has answered once before the first measured turn.
    warm = await scenario.burst("warm-up", fake, list(range(1, 1 + 2 * max(plan.counts))))
    if warm.exact != warm.conversations or len(warm.served) < max(plan.counts):
        raise SystemExit(f"the warm-up of {label} failed: served {dict(warm.served)}, {warm.mismatches[:3]}")
    idle = await scenario.idle(_IDLE_SECONDS)
    print(f"  {_idle_note(idle)}", flush=True)
    number = 1 + warm.conversations
    results: list[Figures] = []
    runs: dict[int, list[InstanceFigures]] = {count: [] for count in plan.counts}
    for count in plan.counts:
        await scenario.use(count)
        results.append(await scenario.burst(f"{label} · {_instances(count)}, 1 alone", fake, [number]))
        number += 1
    for round_ in range(plan.rounds):
        for count in plan.counts if round_ % 2 == 0 else tuple(reversed(plan.counts)):
            await scenario.use(count)
            numbers = list(range(number, number + plan.conversations))
            number += plan.conversations
            run = await scenario.burst(f"{label} · {_instances(count)}", fake, numbers)
            runs[count].append(run)
            print(
                f"  round {round_ + 1}, {_instances(count)}: first text p50 {ms_at(run.first_visible, 0.5)} ms, "
                f"exact {run.exact}, failed {run.failed}, lost {run.lost}, CPU/turn "
                f"{_per_turn_ms(run.cpu_seconds, run)} ms, {turns_per_second(run):.1f} turns/s, {run.wall:.0f} s, "
                f"served {dict(run.served)}",
                flush=True,
            )
    for count, merged in runs.items():
        name = f"{label} · {_instances(count)}, {plan.conversations} at once"
        total = InstanceFigures(name, sum(run.conversations for run in merged), instances=count, repeats=list(merged))
        results.append(merge_runs(total, merged, keep=("name", "conversations", "repeats", "instances")))
        results[-1].notes.append(_idle_note(idle))
    return results


def _idle_note(idle: InstanceFigures) -> str:
    def rate(seconds: float) -> str:
        return f"{seconds / idle.wall * 1000:.0f} ms CPU/s"

    return (
        f"idle, every instance up, {idle.wall:.0f} s: instances {rate(idle.cpu_seconds)}, PostgreSQL "
        f"{rate(idle.postgres_cpu)}, Weaviate {rate(idle.weaviate_cpu)}, {idle.statements / idle.wall:.1f} "
        f"statements/s ({idle.transaction_statements / idle.wall:.1f} BEGIN/COMMIT)"
    )


def _instances(count: int) -> str:
    return f"{count} instance{'s' if count != 1 else ''}"


# The ratio table's rows: a figure of the merged bursts, compared across instance counts.
_COMPARED: list[tuple[str, Callable[[InstanceFigures], float]]] = [
    ("first visible sign p50 (ms)", lambda f: _at(f.first_sign, 0.5)),
    ("first answer text minus TTFT p50 (ms)", lambda f: _at(f.first_visible, 0.5)),
    ("first answer text minus TTFT p95 (ms)", lambda f: _at(f.first_visible, 0.95)),
    ("finals delivered exact (share)", lambda f: f.exact / f.conversations if f.conversations else math.nan),
    ("instances' CPU per turn (ms)", lambda f: f.cpu_seconds / f.conversations * 1000),
    ("turns per second", turns_per_second),
    ("peak RSS of an instance, max (MB)", lambda f: max((max(v) for v in f.instance_peak.values()), default=math.nan)),
    ("PostgreSQL CPU per turn (ms)", lambda f: f.postgres_cpu / f.conversations * 1000),
    ("Weaviate CPU per turn (ms)", lambda f: f.weaviate_cpu / f.conversations * 1000),
]


def _at(values: list[float], fraction: float) -> float:
    return float(ms_at(values, fraction)) if values else math.nan


def _table(columns: list[InstanceFigures], rows: list[tuple[str, Callable[[Any], str]]]) -> None:
    print("| measure | " + " | ".join(figures.name for figures in columns) + " |")
    print("| --- | " + " | ".join("---:" for _ in columns) + " |")
    for label, cell in rows:
        print(f"| {label} | " + " | ".join(cell(figures) for figures in columns) + " |")
    print()


def print_instances(results: list[Figures]) -> None:
    """The merged bursts per size and count, the ratio of each count to the first, the turns alone, misses."""
    runs = [figures for figures in results if isinstance(figures, InstanceFigures)]
    merged = [figures for figures in runs if figures.repeats]
    _table(merged, InstanceFigures.rows)
    sizes = sorted({figures.repeats[0].conversations for figures in merged})
    counts = sorted({figures.instances for figures in merged})
    pairs = [
        (size, [next(f for f in merged if f.instances == n and f.repeats[0].conversations == size) for n in counts])
        for size in sizes
    ]
    heads = [f"{size} at once: {' / '.join(str(n) for n in counts)} instances" for size, _ in pairs]
    print("| measure | " + " | ".join(heads) + " | " + " | ".join(f"ratio at {size}" for size, _ in pairs) + " |")
    print("| --- | " + " | ".join("---:" for _ in pairs * 2) + " |")
    for label, value in _COMPARED:
        cells = [" / ".join(f"{value(f):,.{2 if value(f) < 10 else 0}f}" for f in columns) for _, columns in pairs]
        ratios = [
            " / ".join(f"{value(f) / value(columns[0]):.2f}" for f in columns[1:]) if value(columns[0]) else "n/a"
            for _, columns in pairs
        ]
        print(f"| {label} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    print()
    alone = [figures for figures in runs if not figures.repeats]
    _table(alone, InstanceFigures.rows[:9] + InstanceFigures.rows[16:21])
    for figures in merged:
        for note in figures.notes:
            print(f"{figures.name}: {note}")
        print(f"\n{figures.name}: PostgreSQL statements per turn, commonest first\n")
        print("| statement (pg_stat_statements' text, shortened) | calls per turn | ms per turn |")
        print("| --- | ---: | ---: |")
        for text, calls in figures.statement_calls.most_common(14):
            ms = figures.statement_us[text] / 1000 / figures.conversations
            print(f"| `{text.replace('|', '/')}` | {calls / figures.conversations:.2f} | {ms:.3f} |")
        for line in figures.mismatches[:5]:
            print(f"  {figures.name}, not exact: {line[:160]} … {line[-160:]}")
