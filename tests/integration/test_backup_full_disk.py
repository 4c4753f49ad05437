"""`ragbot backup` onto a disk that fills up: a real tmpfs too small for the dump, mounted in a mount namespace of
the command's own (`unshare`), so nothing outside sees it and it goes when the command ends."""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import insert

from harness.processes import ROOT, SETTINGS_PREFIXES
from storage.backup.archive import DUMPS, check_backup
from storage.backup.manifest import MANIFEST, describe_file, read_manifest
from storage.db import Database, DatabaseConfig
from storage.models import Lease

# Mounts a tmpfs of $SIZE on $MOUNT, runs the script's commands, then copies what is left on it to $LEFT, where the
# test can read it once the namespace (and the tmpfs) is gone.
_ON_SMALL_DISK = """
mount -t tmpfs -o size="$SIZE" tmpfs "$MOUNT" || { echo "cannot mount a tmpfs" >&2; exit 90; }
run() { "$@"; }
commands() {
%s
}
commands; code=$?
cp -a "$MOUNT/." "$LEFT/"
exit $code
"""


RAGBOT = f"{sys.executable} -m bot.cli.main"


async def _fill(db: Database, megabytes: float) -> None:
    """Rows of random text, so the dump outgrows the disk whatever pg_dump's compression makes of it."""
    now = datetime.now(UTC)
    rows = [
        {"name": f"fill:{n}", "owner": secrets.token_hex(60), "expires_at": now}
        for n in range(int(megabytes * 1_000_000 / 190))
    ]
    if rows:
        async with db.engine.begin() as connection:
            await connection.execute(insert(Lease), rows)


def _env(data_dir: Path, database_url: str | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(SETTINGS_PREFIXES)}
    env.update(RAGBOT_DATA_DIR=str(data_dir), PYTHONPATH=str(ROOT))
    if database_url:
        env["DATABASE_URL"] = database_url
    return env


async def _on_small_disk(size: str, commands: str, env: dict[str, str], tmp_path: Path) -> tuple[int, str, Path]:
    """Run `commands` (shell; `$MOUNT` is the small disk, `$RAGBOT` the command) in a mount namespace of their own:
    the exit code, stderr, and a copy of what the disk held at the end."""
    mount, left = tmp_path / "small-disk", tmp_path / "left-on-disk"
    mount.mkdir()
    left.mkdir()
    process = await asyncio.create_subprocess_exec(
        "unshare",
        "--mount",
        "--map-root-user",  # a user namespace too, so it runs as any user where those are allowed
        "sh",
        "-c",
        _ON_SMALL_DISK % commands,
        env={**env, "SIZE": size, "MOUNT": str(mount), "LEFT": str(left), "RAGBOT": RAGBOT},
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    assert process.returncode != 90, stderr.decode()
    return process.returncode, stderr.decode(), left


async def test_a_backup_onto_a_full_disk_fails_in_one_line_and_leaves_no_backup(db: Database, tmp_path: Path) -> None:
    await _fill(db, 2)
    config = db.config
    data_dir = (config.sqlite_path() or tmp_path / "data").parent
    env = _env(data_dir, None if config.is_sqlite else config.url)

    code, stderr, left = await _on_small_disk("256k", '  run $RAGBOT backup "$MOUNT"', env, tmp_path)

    assert code == 1, stderr
    (line,) = stderr.strip().splitlines()
    assert line.startswith("ragbot: backup failed: "), line
    assert "no space left on" in line.lower(), line
    assert line.endswith(f"{tmp_path / 'small-disk'} holds no backup (no manifest.json)"), line
    assert list(left.iterdir()) == [], "no manifest, and the partial dump removed"


async def test_a_forced_backup_that_runs_out_of_space_keeps_the_backup_it_was_to_replace(tmp_path: Path) -> None:
    small, big = tmp_path / "small", tmp_path / "big"
    for folder, megabytes in ((small, 0.0), (big, 3.0)):
        db = Database(DatabaseConfig(url=f"sqlite:///{folder / 'ragbot.sqlite3'}"))
        await db.open()
        await _fill(db, megabytes)
        await db.close()
    commands = f"""
  RAGBOT_DATA_DIR={small} run $RAGBOT backup "$MOUNT/latest" || exit 91
  RAGBOT_DATA_DIR={big} run $RAGBOT backup --force "$MOUNT/latest"
"""

    code, stderr, left = await _on_small_disk("1m", commands, _env(small, None), tmp_path)

    assert code == 1, stderr
    (line,) = stderr.strip().splitlines()
    assert "no space left on" in line.lower(), line
    assert line.endswith(f"the backup already in {tmp_path / 'small-disk' / 'latest'} is kept"), line
    kept = left / "latest"
    assert sorted(path.name for path in kept.iterdir()) == [MANIFEST, DUMPS["sqlite"]]
    await check_backup(kept, DatabaseConfig(url=f"sqlite:///{small / 'ragbot.sqlite3'}"))
    assert read_manifest(kept).files == (describe_file(kept / DUMPS["sqlite"], DUMPS["sqlite"]),)
