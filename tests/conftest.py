"""Fixtures every test tier shares: where the offline model, tiktoken files and Weaviate binary are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def required_path(variable: str, default: Path | None = None) -> Path:
    """A path from the environment (set by `make test`); a missing one fails the test, never skips it."""
    value = os.environ.get(variable)
    path = Path(value) if value else default
    if path is None or not path.exists():
        pytest.fail(f"{variable} is not set to an existing path ({path}); run the tests through `make test`")
    return path


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The offline all-MiniLM-L6-v2 ONNX folder."""
    return required_path("RAGBOT_TEST_MODEL_DIR")


@pytest.fixture(scope="session")
def weaviate_binary() -> Path:
    """The weaviate-server binary built by `make weaviate`."""
    return required_path("RAGBOT_TEST_WEAVIATE_BINARY", ROOT / "bin" / "weaviate-server")


@pytest.fixture(scope="session")
def tiktoken_dir() -> Path:
    """tiktoken's encoding files for offline machines."""
    return required_path("TIKTOKEN_CACHE_DIR")
