"""Fixtures every test tier shares: the embedding model, tiktoken's files and the Weaviate binary.

`make test` points the first two at offline copies in ../shared when that folder exists. Elsewhere
they are fetched the way the product fetches them (model hub, tiktoken's own download), so the
same command works on a machine with a network. Anything missing fails the test; nothing skips.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from rag.config import EmbedderConfig
from rag.embedders import resolve_model_dir
from rag.errors import EmbedderUnavailable

if TYPE_CHECKING:
    from bot.settings import Settings

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


_SERVER_FIXTURES = {"weaviate": ("weaviate_server", "weaviate_binary")}
_services_by_test: dict[str, set[str]] = {}


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
        _services_by_test[item.nodeid] = services


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say how many passed tests ran against each real server, so a silently skipped tier shows."""
    counts = dict.fromkeys(("weaviate", "postgresql", "sqlite"), 0)
    for report in terminalreporter.stats.get("passed", []):
        for service in _services_by_test.get(report.nodeid, ()):
            counts[service] += 1
    terminalreporter.write_line(
        "real servers: " + ", ".join(f"{count} passed against {service}" for service, count in counts.items())
    )


EmbeddedSettings = Callable[..., "Settings"]
"""Builds Settings for services started in the test process: `(data_dir, **more_settings) -> Settings`."""


@pytest.fixture(scope="session")
def embedded_settings(weaviate_binary: Path, model_dir: Path, tiktoken_dir: Path | None) -> EmbeddedSettings:
    """Settings on the embedded defaults (local Weaviate, the ONNX model, offline tiktoken), no .env read."""
    from bot.settings import Settings

    def build(data_dir: Path, **more: Any) -> Settings:
        return Settings(
            _env_file=None,  # type: ignore[call-arg]
            RAGBOT_DATA_DIR=data_dir,
            WEAVIATE_BINARY=weaviate_binary,
            EMBEDDING_MODEL_DIR=model_dir,
            TIKTOKEN_CACHE_DIR=tiktoken_dir,
            **more,
        )

    return build
