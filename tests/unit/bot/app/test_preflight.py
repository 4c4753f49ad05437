"""Preflight: each bad setting stops start-up with a StartupError naming the variable to change."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from bot.app.preflight import check_port_free, check_settings, nearest_existing
from bot.app.settings import Settings
from bot.errors import StartupError


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ragbot variable from the developer's shell or Makefile (it exports EMBEDDING_MODEL_DIR), no stray .env."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def weaviate_binary(tmp_path: Path) -> Path:
    """An executable stand-in for weaviate-server (preflight only checks that it can be run)."""
    binary = tmp_path / "bin" / "weaviate-server"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    binary.chmod(0o755)
    return binary


@pytest.fixture
def good_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, weaviate_binary: Path) -> None:
    """A configuration every check accepts: embedded SQLite and Weaviate, the model downloaded on demand."""
    monkeypatch.setenv("RAGBOT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("WEAVIATE_BINARY", str(weaviate_binary))


def _check(*, serving: bool = False) -> None:
    check_settings(Settings(_env_file=None), serving=serving)


def test_port_held_by_another_listener_stops_startup() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(StartupError) as caught:
            check_port_free("127.0.0.1", port)
    assert caught.value.setting == "RAGBOT_PORT"
    assert f"port {port}" in caught.value.problem
    assert "in use" in caught.value.problem


def test_nearest_existing_walks_up_to_a_real_ancestor(tmp_path: Path) -> None:
    assert nearest_existing(tmp_path / "a" / "b" / "c") == tmp_path
    assert nearest_existing(tmp_path) == tmp_path


@pytest.mark.usefixtures("good_env")
def test_data_dir_under_a_regular_file_names_ragbot_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("RAGBOT_DATA_DIR", str(blocker / "nested" / "data"))
    with pytest.raises(StartupError) as caught:
        _check()
    assert caught.value.setting == "RAGBOT_DATA_DIR"
    assert str(blocker) in caught.value.problem


@pytest.mark.usefixtures("good_env")
@pytest.mark.parametrize("state", ["missing", "not executable"])
def test_unusable_weaviate_binary_without_weaviate_url_points_at_make_weaviate(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, state: str
) -> None:
    binary = tmp_path / "elsewhere" / "weaviate-server"
    if state == "not executable":
        binary.parent.mkdir()
        binary.write_text("#!/bin/sh\n", encoding="utf-8")
        binary.chmod(0o644)
    monkeypatch.setenv("WEAVIATE_BINARY", str(binary))
    with pytest.raises(StartupError) as caught:
        _check()
    assert caught.value.setting == "WEAVIATE_BINARY"
    assert str(binary) in caught.value.problem
    assert "make weaviate" in caught.value.fix


@pytest.mark.usefixtures("good_env")
def test_weaviate_binary_is_not_needed_when_weaviate_url_is_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("WEAVIATE_BINARY", str(tmp_path / "missing"))
    monkeypatch.setenv("WEAVIATE_URL", "http://weaviate.internal:8080")
    _check()


@pytest.mark.usefixtures("good_env")
def test_missing_embedding_model_dir_names_embedding_model_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EMBEDDING_MODEL_DIR", str(tmp_path / "no-such-model"))
    with pytest.raises(StartupError) as caught:
        _check()
    assert caught.value.setting == "EMBEDDING_MODEL_DIR"
    assert "no-such-model" in caught.value.problem


@pytest.mark.usefixtures("good_env")
def test_existing_embedding_model_dir_passes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    monkeypatch.setenv("EMBEDDING_MODEL_DIR", str(tmp_path / "model"))
    _check()


@pytest.mark.usefixtures("good_env")
def test_openai_embeddings_without_base_url_name_embedding_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBEDDING_PROVIDER", "openai")
    with pytest.raises(StartupError) as caught:
        _check()
    assert caught.value.setting == "EMBEDDING_BASE_URL"


@pytest.mark.usefixtures("good_env")
@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"RERANK_PROVIDER": "api"}, "RERANK_BASE_URL"),
        ({"ANSWER_FALLBACK": "model"}, "ANSWER_FALLBACK"),
    ],
)
def test_an_option_missing_what_it_needs_names_the_setting(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], named: str
) -> None:
    for variable, value in variables.items():
        monkeypatch.setenv(variable, value)
    with pytest.raises(StartupError) as caught:
        _check()
    assert caught.value.setting == named


@pytest.mark.usefixtures("good_env")
def test_good_configuration_passes_and_writes_nothing(tmp_path: Path) -> None:
    _check()
    assert not (tmp_path / "data").exists()


def test_startup_error_message_names_setting_problem_and_fix() -> None:
    error = StartupError("RAGBOT_PORT", "port 8080 on 127.0.0.1 is in use", "set RAGBOT_PORT to a free port")
    assert str(error) == "RAGBOT_PORT: port 8080 on 127.0.0.1 is in use. Fix: set RAGBOT_PORT to a free port"


@pytest.mark.parametrize(
    ("env", "setting"),
    [
        ({"SLACK_BOT_TOKEN": "xoxb-1"}, "SLACK_SIGNING_SECRET"),
        ({"SLACK_APP_TOKEN": "xapp-1"}, "SLACK_BOT_TOKEN"),
        ({"SLACK_CLIENT_ID": "1.2"}, "SLACK_CLIENT_SECRET"),
        ({"SLACK_CLIENT_ID": "1.2", "SLACK_CLIENT_SECRET": "s", "SLACK_APP_TOKEN": "xapp-1"}, "SLACK_SIGNING_SECRET"),
    ],
)
@pytest.mark.usefixtures("good_env")
def test_slack_settings_that_cannot_work_together_stop_startup(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], setting: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(StartupError) as caught:
        _check()
    assert caught.value.setting == setting


@pytest.mark.parametrize(
    "env",
    [
        {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s"},
        {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"},
        {"SLACK_CLIENT_ID": "1.2", "SLACK_CLIENT_SECRET": "s", "SLACK_SIGNING_SECRET": "s"},
    ],
)
@pytest.mark.usefixtures("good_env")
def test_each_slack_transport_starts_with_what_it_needs(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    _check()
