"""The web chat's session key in the database: one key for every instance on it, whatever data dir each has."""

from __future__ import annotations

import asyncio
from pathlib import Path

from adapters.web.session import SessionSigner, load_key
from storage.db import Database
from storage.repos.shared_keys import shared_key


async def test_instances_with_their_own_data_dirs_check_each_others_session_cookies(
    db: Database, tmp_path: Path
) -> None:
    first = SessionSigner(await load_key(db, tmp_path / "first"))
    second = SessionSigner(await load_key(db, tmp_path / "second"))
    cookie = first.new_session()
    assert second.session_id(cookie) == cookie.split(".")[0]
    assert second.is_admin(cookie.split(".")[0], first.admin_cookie(cookie.split(".")[0], "admin-token"), "admin-token")


async def test_the_key_an_older_ragbot_kept_in_its_data_dir_becomes_the_shared_one(
    db: Database, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "web-session.key").write_bytes(b"k" * 32)
    old_cookie = SessionSigner(b"k" * 32).new_session()
    key = await load_key(db, data_dir)
    assert key == b"k" * 32
    assert SessionSigner(await load_key(db, tmp_path / "elsewhere")).session_id(old_cookie) is not None


async def test_instances_starting_together_all_get_the_one_key_stored(db: Database) -> None:
    candidates = [bytes([n]) * 32 for n in range(6)]
    keys = await asyncio.gather(*(shared_key(db, "race", candidate) for candidate in candidates))
    assert len(set(keys)) == 1
    assert keys[0] in candidates
    assert await shared_key(db, "race", b"late" * 8) == keys[0]
