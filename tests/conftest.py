"""Fixtures every test tier shares: the embedding model, tiktoken's files, the Weaviate binary and server, PostgreSQL.

`make test` points the first two at offline copies in ../shared when that folder exists. Elsewhere
they are fetched the way the product fetches them (model hub, tiktoken's own download), so the
same command works on a machine with a network. Anything missing fails the test; nothing skips.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from harness.neo4j import Neo4jServer, running_neo4j
from harness.postgres import create_database, running_postgres
from rag.config import EmbedderConfig
from rag.errors import EmbedderUnavailable
from rag.models.embedders import resolve_model_dir
from storage.weaviate.config import WeaviateServerConfig
from storage.weaviate.server import WeaviateServer

if TYPE_CHECKING:
    from bot.app.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def _configured_path(variable: str) -> Path | None:
    value = os.environ.get(variable)
    if not value:
        return None
    path = Path(value)
    if not path.exists():
        pytest.fail(f"{variable}={value} does not exist")
    return path


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The all-MiniLM-L6-v2 ONNX folder: RAGBOT_TEST_MODEL_DIR, or downloaded as the product would."""
    configured = _configured_path("RAGBOT_TEST_MODEL_DIR")
    if configured is not None:
        return configured
    config = EmbedderConfig(provider="local", model=MODEL, model_dir=None, cache_dir=Path.home() / ".cache" / "ragbot")
    try:
        return resolve_model_dir(config)
    except EmbedderUnavailable as exc:
        pytest.fail(f"no embedding model: set RAGBOT_TEST_MODEL_DIR or allow the download ({exc})")


@pytest.fixture(scope="session")
def tiktoken_dir() -> Path | None:
    """tiktoken's encoding files (TIKTOKEN_CACHE_DIR), or None to let tiktoken download them."""
    return _configured_path("TIKTOKEN_CACHE_DIR")


@pytest.fixture(scope="session")
def weaviate_binary() -> Path:
    """The weaviate-server binary built by `make weaviate`."""
    path = _configured_path("RAGBOT_TEST_WEAVIATE_BINARY") or ROOT / "bin" / "weaviate-server"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run the tests through `make test` (it runs `make weaviate`)")
    return path


@pytest_asyncio.fixture(scope="session")
async def weaviate_server(
    weaviate_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[WeaviateServer]:
    """One local weaviate-server for the session (for each xdist worker), started by ragbot's own supervisor.

    Tests that are not about starting or owning a Weaviate share it: each start costs seconds (Raft elects the
    single node its leader first). They keep apart by knowledge-base ids, as tenants of one Weaviate do.
    """
    server = WeaviateServer(WeaviateServerConfig(binary=weaviate_binary, data_dir=tmp_path_factory.mktemp("weaviate")))
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture(scope="session")
def neo4j_home() -> Path:
    """The Neo4j server's jars, copied from Maven Central by `make neo4j`."""
    path = _configured_path("RAGBOT_TEST_NEO4J_HOME") or ROOT / "bin" / "neo4j"
    if not any((path / "lib").glob("neo4j-*.jar")):
        pytest.fail(f"no Neo4j jars in {path / 'lib'}: run the tests through `make test` (it runs `make neo4j`)")
    return path


@pytest_asyncio.fixture(scope="session")
async def neo4j_server(neo4j_home: Path) -> AsyncIterator[Neo4jServer]:
    """One throw-away Neo4j for the session (for each xdist worker); tests keep apart by knowledge-base ids."""
    async with running_neo4j(neo4j_home) as server:
        yield server


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL: RAGBOT_TEST_DATABASE_URL if given, else a throw-away cluster started here."""
    external = os.environ.get("RAGBOT_TEST_DATABASE_URL")
    if external:
        yield external.rstrip("/")
        return
    with running_postgres() as url:
        yield url


async def fresh_postgres_database(base_url: str) -> str:
    """The URL of a new, empty database on the cluster at `base_url`."""
    return await create_database(base_url)


def weaviate_urls(server: WeaviateServer) -> dict[str, str]:
    """WEAVIATE_URL and WEAVIATE_GRPC_URL naming a running server, as a user points ragbot at a Weaviate."""
    endpoint = server.endpoint
    assert endpoint is not None, "the Weaviate server is not running"
    return {
        "WEAVIATE_URL": endpoint.http_url,
        "WEAVIATE_GRPC_URL": f"http://{endpoint.grpc_host}:{endpoint.grpc_port}",
    }


_SERVER_FIXTURES = {
    "weaviate": ("weaviate_server", "weaviate_binary"),
    "postgresql": ("postgres_url",),
    "neo4j": ("neo4j_server", "neo4j_home"),
}
_SERVICES = "ragbot_services"
"""The user property naming the real servers a test ran against; a property, so it reaches xdist's controller."""
_TIERS = ("unit", "integration", "e2e")


def _tier(nodeid: str) -> str:
    """The top-level test folder of a test id ("tests/e2e/test_cli.py::…" -> "e2e")."""
    parts = nodeid.split("::", 1)[0].split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else "other"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Note which real servers each test uses, for the closing summary."""
    for item in items:
        if "unit" in Path(str(item.path)).relative_to(ROOT / "tests").parts[:1]:
            continue  # unit tests use no servers; some define fixtures of the same names
        names = set(getattr(item, "fixturenames", ()))
        services = {service for service, fixtures in _SERVER_FIXTURES.items() if names & set(fixtures)}
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "database_url" in callspec.params:
            services.add(str(callspec.params["database_url"]))
        if callspec is not None and callspec.params.get("graph_store") == "neo4j":
            services.add("neo4j")
        item.user_properties.append((_SERVICES, sorted(services)))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say how many passed tests ran against each real server, so a silently skipped tier shows; then tier times."""
    counts = dict.fromkeys(("weaviate", "postgresql", "sqlite", "neo4j"), 0)
    for report in terminalreporter.stats.get("passed", []):
        for name, services in report.user_properties:
            if name == _SERVICES:
                for service in services:
                    counts[service] += 1
    terminalreporter.write_line(
        "real servers: " + ", ".join(f"{count} passed against {service}" for service, count in counts.items())
    )
    terminalreporter.write_line("tier times, first test to last (tests' own time): " + _tier_times(terminalreporter))


def _tier_times(terminalreporter: pytest.TerminalReporter) -> str:
    """Per top-level folder: wall time from its first test's start to its last test's end, and its tests' summed time.

    With pytest-xdist the summed time is spread over the workers, and tiers overlap where one hands over to the
    next. Setup and teardown count, so a session fixture's start lands in the first tier that asks for it.
    """
    spans: dict[str, list[float]] = {}
    summed: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if not isinstance(report, pytest.TestReport) or not report.start:
                continue
            tier = _tier(report.nodeid)
            span = spans.setdefault(tier, [report.start, report.stop])
            span[0], span[1] = min(span[0], report.start), max(span[1], report.stop)
            summed[tier] = summed.get(tier, 0.0) + report.duration
    order = [tier for tier in _TIERS if tier in spans] + sorted(set(spans) - set(_TIERS))
    return ", ".join(f"{tier} {spans[tier][1] - spans[tier][0]:.1f} s (tests {summed[tier]:.1f} s)" for tier in order)


EmbeddedSettings = Callable[..., "Settings"]
"""Builds Settings for services started in the test process: `(data_dir, **more_settings) -> Settings`."""


@pytest.fixture(scope="session")
def embedded_settings(
    weaviate_binary: Path, weaviate_server: WeaviateServer, model_dir: Path, tiktoken_dir: Path | None
) -> EmbeddedSettings:
    """Settings on the embedded defaults (SQLite in the data dir, the ONNX model, offline tiktoken), no .env read.

    The Weaviate is the session's (WEAVIATE_URL): these tests are about chats and answers, not about starting a
    Weaviate, which the CLI tests of `ragbot serve` and tests/integration/test_weaviate_server.py cover.
    """
    from bot.app.settings import Settings

    shared = weaviate_urls(weaviate_server)

    def build(data_dir: Path, **more: Any) -> Settings:
        return Settings(
            _env_file=None,  # type: ignore[call-arg]
            RAGBOT_DATA_DIR=data_dir,
            WEAVIATE_BINARY=weaviate_binary,
            EMBEDDING_MODEL_DIR=model_dir,
            TIKTOKEN_CACHE_DIR=tiktoken_dir,
            **{**shared, **more},
        )

    return build
