"""`ragbot serve` and `ragbot doctor` as a user runs them: embedded defaults, health, clean stop, bad settings."""

from __future__ import annotations

import asyncio
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from harness.processes import ragbot, run_ragbot, wait_until_ready


async def test_serve_on_embedded_defaults_reports_every_part_and_stops_cleanly(
    user_env: dict[str, str], tmp_path: Path
) -> None:
    process = await ragbot(user_env, tmp_path, "serve")
    url = f"http://127.0.0.1:{user_env['RAGBOT_PORT']}"
    try:
        await wait_until_ready(url, process)
        async with aiohttp.ClientSession() as http, http.get(f"{url}/healthz") as response:
            assert response.status == 200
            health = await response.json()
        async with aiohttp.ClientSession() as http, http.get(f"{url}/readyz") as response:
            ready = (response.status, await response.json())
        async with aiohttp.ClientSession() as http, http.get(f"{url}/metrics") as response:
            metrics = await response.text()
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert {name: part["status"] for name, part in health.items()} == {
        "db": "ok",
        "weaviate": "ok",
        "embedder": "ok",
        "model": "missing",
    }
    assert health["model"]["detail"].startswith("not configured")
    assert ready == (200, {"ready": True})
    assert 'ragbot_part_up{part="weaviate"} 1' in metrics
    assert "process_resident_memory_bytes " in metrics
    assert process.returncode == 0, stderr.decode()
    data = Path(user_env["RAGBOT_DATA_DIR"])
    assert (data / "ragbot.sqlite3").exists()
    assert not (data / "weaviate" / "ragbot-weaviate.pid").exists(), "weaviate-server was not stopped"


async def test_serve_names_the_default_knowledge_bases_that_do_not_exist_and_how_to_create_them(
    shared_weaviate_env: dict[str, str], tmp_path: Path
) -> None:
    code, _, stderr = await run_ragbot(shared_weaviate_env, tmp_path, "kb", "create", "docs")
    assert code == 0, stderr
    env = {**shared_weaviate_env, "DEFAULT_KNOWLEDGE_BASES": "handbook,docs"}
    process = await ragbot(env, tmp_path, "serve")
    try:
        await wait_until_ready(f"http://127.0.0.1:{env['RAGBOT_PORT']}", process)
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), 60)
    warnings = [line for line in err.decode().splitlines() if "knowledge_bases=missing" in line]
    assert len(warnings) == 1, err.decode()
    assert "WARNING" in warnings[0]
    assert "names=handbook " in warnings[0]
    assert "DEFAULT_KNOWLEDGE_BASES" in warnings[0]
    assert "`ragbot kb create handbook`" in warnings[0]
    assert "/kb create handbook" in warnings[0]
    assert "docs" not in warnings[0]


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


BAD_SETTINGS = [
    pytest.param({"DATABASE_URL": "mysql://u@h/db"}, "DATABASE_URL", id="unsupported-database"),
    pytest.param({"DATABASE_URL": "::not a url::"}, "DATABASE_URL", id="malformed-database-url"),
    pytest.param({"DATABASE_URL": "postgresql://u@127.0.0.1:1/db"}, "DATABASE_URL", id="unreachable-database"),
    pytest.param({"WEAVIATE_URL": "http://127.0.0.1:1"}, "WEAVIATE_URL", id="unreachable-weaviate"),
    pytest.param({"WEAVIATE_BINARY": "/nonexistent/weaviate-server"}, "WEAVIATE_BINARY", id="missing-binary"),
    pytest.param({"EMBEDDING_MODEL_DIR": "/nonexistent/model"}, "EMBEDDING_MODEL_DIR", id="missing-model-dir"),
    pytest.param({"RAGBOT_PORT": "70000"}, "RAGBOT_PORT", id="port-out-of-range"),
    pytest.param({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL", id="bad-log-level"),
]


@pytest.mark.parametrize(("overrides", "variable"), BAD_SETTINGS)
async def test_bad_setting_stops_start_up_with_one_line_and_writes_nothing(
    user_env: dict[str, str], tmp_path: Path, overrides: dict[str, str], variable: str
) -> None:
    process = await ragbot({**user_env, **overrides}, tmp_path, "serve")
    _, stderr = await asyncio.wait_for(process.communicate(), 120)
    lines = stderr.decode().strip().splitlines()
    assert process.returncode == 2
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"ragbot: {variable}")
    assert not Path(user_env["RAGBOT_DATA_DIR"]).exists()


async def test_port_in_use_stops_start_up_naming_the_port(
    user_env: dict[str, str], tmp_path: Path, busy_port: int
) -> None:
    process = await ragbot({**user_env, "RAGBOT_PORT": str(busy_port)}, tmp_path, "serve")
    _, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 2
    assert stderr.decode().strip() == (
        f"ragbot: RAGBOT_PORT: port {busy_port} on 127.0.0.1 is in use. "
        "Fix: set RAGBOT_PORT to a free port or stop the other process"
    )
    assert not Path(user_env["RAGBOT_DATA_DIR"]).exists()


async def test_unwritable_data_dir_stops_start_up(user_env: dict[str, str], tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    process = await ragbot({**user_env, "RAGBOT_DATA_DIR": str(blocker / "data")}, tmp_path, "serve")
    _, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 2
    assert stderr.decode().startswith("ragbot: RAGBOT_DATA_DIR:")


async def test_typo_in_dotenv_names_the_unknown_key(user_env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("DATABSE_URL=postgresql://u@h/db\n")
    process = await ragbot(user_env, tmp_path, "serve")
    _, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 2
    assert stderr.decode().strip() == "ragbot: DATABSE_URL: is not a ragbot setting (typo in .env?)"


async def test_doctor_reports_each_part_and_the_missing_model(user_env: dict[str, str], tmp_path: Path) -> None:
    process = await ragbot(user_env, tmp_path, "doctor")
    stdout, stderr = await asyncio.wait_for(process.communicate(), 180)
    report = stdout.decode()
    assert process.returncode == 0, report + stderr.decode()
    verdicts = {line.split()[1]: line.split()[0] for line in report.splitlines() if not line.startswith(" ")}
    assert verdicts == {
        "data": "OK",
        "database": "OK",
        "weaviate": "OK",
        "embedder": "OK",
        "chat": "MISSING",
        "tokens": "OK",
        "ocr": "OK",
    }


async def test_doctor_names_the_fix_for_a_broken_part(user_env: dict[str, str], tmp_path: Path) -> None:
    env = {**user_env, "DATABASE_URL": "postgresql://u@127.0.0.1:1/db", "WEAVIATE_URL": "http://127.0.0.1:1"}
    process = await ragbot(env, tmp_path, "doctor")
    stdout, _ = await asyncio.wait_for(process.communicate(), 120)
    report = stdout.decode()
    assert process.returncode == 1
    assert "ERROR    database" in report
    assert "ERROR    weaviate" in report
    assert "fix: check DATABASE_URL" in report
    assert "OK       embedder" in report
