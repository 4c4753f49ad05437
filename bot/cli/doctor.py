"""`ragbot doctor`: checks each part on its own; says what runs, what is configured and how to fix the rest."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

import openai

from bot.app.preflight import check_writable_dir
from bot.app.settings import Settings, platform_settings
from bot.chat.instances import CONVERSATION_PREFIX, INSTANCE_PREFIX
from bot.errors import StartupError
from rag.errors import RagError
from rag.models.chat import OpenAIChatModel
from rag.models.embedders import OpenAIEmbedder, build_embedder
from rag.tokens import TokenCounter
from storage.db import Database
from storage.errors import IndexUnavailable, ServerInUse, StorageError
from storage.repos.leases import LeaseRepo
from storage.weaviate.cluster import NodeHealth
from storage.weaviate.config import WEAVIATE_VERSION
from storage.weaviate.server import WeaviateServer
from storage.weaviate.store import WeaviateStore, endpoints_from_urls

Verdict = Literal["ok", "missing", "error"]
# Leases that are not a role one process holds for all: each process's presence, each conversation's turn.
_NOT_ROLES = (INSTANCE_PREFIX, CONVERSATION_PREFIX)


@dataclass(frozen=True, slots=True)
class Finding:
    """One part's verdict, what runs, and the fix when it is broken."""

    part: str
    verdict: Verdict
    detail: str
    fix: str = ""


async def _data_dir(settings: Settings) -> Finding:
    check_writable_dir("RAGBOT_DATA_DIR", settings.data_dir)
    return Finding("data dir", "ok", str(settings.data_dir))


async def database_finding(settings: Settings) -> Finding:
    """The database's check: reachable, migrated, and which `ragbot serve` processes are alive on it."""
    config = settings.database()
    db = Database(config)
    try:
        await db.open()
        live = await LeaseRepo(db).live("")
    finally:
        await db.close()
    serving = sorted(lease.owner for lease in live if lease.name.startswith(INSTANCE_PREFIX))
    # What one process does for all (the Telegram poller of a bot, a reindex): which process does it now.
    roles = sorted(f"{lease.name} by {lease.owner}" for lease in live if not lease.name.startswith(_NOT_ROLES))
    where = "embedded SQLite" if config.is_sqlite else "PostgreSQL (DATABASE_URL)"
    alive = f"`ragbot serve` alive on it: {', '.join(serving)}" if serving else "no `ragbot serve` on it"
    held = f"; held: {', '.join(roles)}" if roles else ""
    return Finding("database", "ok", f"{where}: {config.redacted()}, schema up to date; {alive}{held}")


async def _weaviate(settings: Settings) -> Finding:
    if settings.WEAVIATE_URL:
        store = await WeaviateStore.connect(
            endpoints_from_urls(settings.WEAVIATE_URL, settings.WEAVIATE_GRPC_URL), settings.weaviate()
        )
        try:
            nodes = await store.nodes()
        finally:
            await store.close()
        return _cluster_finding(f"remote cluster at {settings.WEAVIATE_URL}", nodes)
    server = WeaviateServer(settings.weaviate_server())
    try:
        endpoint = await server.start()
        store = await WeaviateStore.connect(endpoint, settings.weaviate())
        await store.close()
    except ServerInUse as exc:
        return await _shared_weaviate(settings, server, exc)
    finally:
        await server.stop()
    binary = settings.weaviate_server().binary
    return Finding(
        "weaviate",
        "ok",
        f"embedded: {binary} (v{WEAVIATE_VERSION} pinned), data in {settings.weaviate_server().data_dir}",
    )


def _cluster_finding(where: str, nodes: list[NodeHealth]) -> Finding:
    """The cluster's nodes, each with status and version; an error naming every node that is not HEALTHY.

    A single healthy node says no more than before: there is no cluster to describe.
    """
    unhealthy = [node for node in nodes if not node.healthy]
    if len(nodes) <= 1 and not unhealthy:
        return Finding("weaviate", "ok", where)
    listed = ", ".join(f"{node.name} {node.status}" + (f" v{node.version}" if node.version else "") for node in nodes)
    detail = f"{where}; {len(nodes)} nodes: {listed}"
    if not unhealthy:
        return Finding("weaviate", "ok", detail)
    names = ", ".join(f"{node.name} is {node.status}" for node in unhealthy)
    return Finding(
        "weaviate",
        "error",
        detail,
        f"{names}: start it again or read its log; until then each object has one replica fewer",
    )


async def _shared_weaviate(settings: Settings, server: WeaviateServer, in_use: ServerInUse) -> Finding:
    """The server a running ragbot (serve) owns on this data dir, checked through the endpoint it serves."""
    try:
        endpoint = server.attach_endpoint(in_use)
    except ServerInUse:
        # The owner writes where it answers once its server is ready: until then there is nothing to ask.
        return Finding(
            "weaviate", "error", str(in_use), "if that ragbot is starting, wait and run `ragbot doctor` again"
        )
    where = f"served by the running ragbot, pid {endpoint.owner_pid}, {endpoint.http_url}"
    try:
        store = await WeaviateStore.connect(endpoint, settings.weaviate())
    except IndexUnavailable as exc:
        return Finding(
            "weaviate",
            "error",
            f"{where}, but it does not answer: {exc}",
            f"restart that ragbot (pid {endpoint.owner_pid}), or stop it and run `ragbot doctor` alone",
        )
    await store.close()
    return Finding("weaviate", "ok", f"{where}, data in {settings.weaviate_server().data_dir}")


async def _embedder(settings: Settings) -> Finding:
    embedder = build_embedder(settings.embedder())
    try:
        vectors = await embedder.embed(["ragbot doctor"])
    finally:
        if isinstance(embedder, OpenAIEmbedder):
            await embedder.close()
    kind = "local ONNX" if embedder.provider == "local" else f"API at {settings.EMBEDDING_BASE_URL}"
    return Finding("embedder", "ok", f"{kind}: {embedder.model_id}, {len(vectors[0])} dimensions")


async def _model(settings: Settings) -> Finding:
    config = settings.chat_model()
    if config is None:
        return Finding(
            "chat model",
            "missing",
            "not configured: answers are extractive",
            "set CHAT_MODEL (and CHAT_MODEL_BASE_URL) for generated answers",
        )
    model = OpenAIChatModel(config)
    client = openai.AsyncOpenAI(base_url=config.base_url, api_key=config.api_key or "unused", timeout=10, max_retries=0)
    try:
        await client.models.list()
    except openai.APIError as exc:
        return Finding(
            "chat model",
            "error",
            f"{config.model} at {config.base_url or 'api.openai.com'}: {exc}",
            "check CHAT_MODEL_BASE_URL and CHAT_MODEL_API_KEY",
        )
    finally:
        await client.close()
        await model.close()
    return Finding("chat model", "ok", f"{config.model} at {config.base_url or 'the OpenAI API'}")


async def _tokens(settings: Settings) -> Finding:
    counter = TokenCounter(settings.TOKEN_ENCODING, settings.TIKTOKEN_CACHE_DIR)
    counter.count("ragbot doctor")
    return Finding("tokens", "ok", f"tiktoken {counter.name}")


async def ocr_finding(settings: Settings) -> Finding:
    """Whether Tesseract runs and has the language packs OCR_LANGUAGES names (without it, scans and photos are
    refused with a note, and everything else works: so it is missing, not an error)."""
    command = settings.OCR_COMMAND
    try:
        process = await asyncio.create_subprocess_exec(
            command, "--list-langs", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
    except (FileNotFoundError, PermissionError):
        return Finding(
            "ocr",
            "missing",
            f"Tesseract not found ({command}): scanned pages, images and photos sent with questions are refused "
            "with a note",
            "install Tesseract and its language packs (`make tesseract`: Debian's tesseract-ocr, tesseract-ocr-eng, "
            "tesseract-ocr-chi-sim, tesseract-ocr-osd), or set OCR_COMMAND",
        )
    try:
        listed, _ = await asyncio.wait_for(process.communicate(), 30)
    except TimeoutError:
        process.kill()
        raise
    # The first line is a heading ("List of available languages in ..."), then one pack a line.
    installed = {line.strip() for line in listed.decode(errors="replace").splitlines()[1:]}
    absent = [language for language in settings.OCR_LANGUAGES.split("+") if language not in installed]
    if absent:
        return Finding(
            "ocr",
            "error",
            f"Tesseract has no {', '.join(absent)} language pack, which OCR_LANGUAGES names: every image would fail",
            "install the packs (Debian: "
            + ", ".join(f"tesseract-ocr-{name.replace('_', '-')}" for name in absent)
            + "), or set OCR_LANGUAGES to those installed: "
            + "+".join(sorted(installed)),
        )
    upright = "" if "osd" in installed else "; no osd pack, so pages scanned sideways are read as they lie"
    return Finding("ocr", "ok", f"Tesseract ({command}), {settings.OCR_LANGUAGES}{upright}")


_FIXES = {
    "database": "check DATABASE_URL (host, credentials, database name), or unset it for embedded SQLite",
    "weaviate": "run `make weaviate`, or set WEAVIATE_URL to a reachable Weaviate",
    "embedder": "set EMBEDDING_MODEL_DIR to a local model folder, or give the machine a network",
    "tokens": "set TIKTOKEN_CACHE_DIR to a folder with the encoding files, or give the machine a network",
    "ocr": "check OCR_COMMAND: `tesseract --list-langs` should answer at once",
}

_CHECKS: tuple[tuple[str, Callable[[Settings], Awaitable[Finding]]], ...] = (
    ("data dir", _data_dir),
    ("database", database_finding),
    ("weaviate", _weaviate),
    ("embedder", _embedder),
    ("chat model", _model),
    ("tokens", _tokens),
    ("ocr", ocr_finding),
)


async def diagnose(settings: Settings) -> list[Finding]:
    """Every check, each on its own: one broken part does not hide the others."""
    findings = []
    for part, check in _CHECKS:
        try:
            findings.append(await check(settings))
        except StartupError as exc:
            findings.append(Finding(part, "error", exc.problem, exc.fix))
        except (StorageError, RagError, OSError, ValueError) as exc:
            findings.append(Finding(part, "error", str(exc), _FIXES.get(part, "")))
    return findings + platform_advice(settings)


def platform_advice(settings: Settings) -> list[Finding]:
    """What each chat platform's settings leave shut (a private Telegram bot nobody is let into)."""
    return [
        Finding(model.platform, "missing", f"{advice.setting}: {advice.problem}", advice.fix)
        for model in platform_settings()
        for advice in model.of(settings).advice()
    ]


def render(findings: list[Finding]) -> str:
    """A plain-text table, one line per part plus its fix."""
    lines = []
    for finding in findings:
        lines.append(f"{finding.verdict.upper():8} {finding.part:11} {finding.detail}")
        if finding.fix and finding.verdict != "ok":
            lines.append(f"{'':8} {'':11} fix: {finding.fix}")
    return "\n".join(lines)


def exit_code(findings: list[Finding]) -> int:
    """0 when nothing is in error."""
    with contextlib.suppress(StopIteration):
        next(f for f in findings if f.verdict == "error")
        return 1
    return 0


async def run_doctor(settings: Settings) -> int:
    """Print every part's state; non-zero when one is broken."""
    findings = await diagnose(settings)
    print(render(findings))
    return exit_code(findings)
