"""End-to-end fixtures: a user's environment on the embedded defaults, or pointed at the session's Weaviate."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.processes import ROOT, SETTINGS_PREFIXES, free_port
from storage.weaviate.server import WeaviateServer
from tests.conftest import weaviate_urls


@pytest.fixture
def user_env(tmp_path: Path, weaviate_binary: Path, model_dir: Path, tiktoken_dir: Path | None) -> dict[str, str]:
    """A user's environment on the embedded defaults: no DATABASE_URL, no WEAVIATE_URL, no model."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(SETTINGS_PREFIXES)}
    env.update(
        RAGBOT_DATA_DIR=str(tmp_path / "data"),
        RAGBOT_PORT=str(free_port()),
        WEAVIATE_BINARY=str(weaviate_binary),
        EMBEDDING_MODEL_DIR=str(model_dir),
        PYTHONPATH=str(ROOT),
    )
    if tiktoken_dir is not None:
        env["TIKTOKEN_CACHE_DIR"] = str(tiktoken_dir)
    return env


@pytest.fixture
def shared_weaviate_env(user_env: dict[str, str], weaviate_server: WeaviateServer) -> dict[str, str]:
    """`user_env` with WEAVIATE_URL naming the session's Weaviate: the data dir (SQLite) is still the test's own.

    For tests of what commands do, not of how ragbot starts or shares its own Weaviate: every command of theirs
    would otherwise start a Weaviate of its own, seconds each. Those about start-up keep `user_env`.
    """
    return {**user_env, **weaviate_urls(weaviate_server)}
