"""`ragbot backup DIR`: the relational store dumped into DIR with its manifest, while the service runs.

It opens the database alone: no Weaviate, no embedder. The index needs no copy of its own, since `ragbot restore`
rebuilds it from the chunks, FAQs and cached vectors the dump holds.
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TextIO

from bot.app.settings import Settings
from bot.errors import UserFacingError
from storage.backup.archive import make_backup
from storage.errors import BackupError

_KINDS = {"sqlite": "the SQLite store", "postgresql": "the PostgreSQL database"}


def ragbot_version() -> str:
    """This ragbot's version as installed, for the manifest."""
    try:
        return version("ragbot")
    except PackageNotFoundError:
        return "unknown"


def file_size(size: int) -> str:
    """A byte count as a person reads it."""
    if size < 1024:
        return f"{size} bytes"
    scaled, unit = size / 1024, "KB"
    for bigger in ("MB", "GB"):
        if scaled < 1024:
            break
        scaled, unit = scaled / 1024, bigger
    return f"{scaled:.1f} {unit}"


async def run_backup(settings: Settings, directory: Path, *, force: bool, out: TextIO = sys.stdout) -> int:
    """Write the backup, then say what it holds and what it does not."""
    try:
        manifest = await make_backup(settings.database(), directory, ragbot_version=ragbot_version(), force=force)
    except BackupError as exc:
        raise UserFacingError(str(exc)) from exc
    dump = manifest.files[0]
    out.write(
        f"backed up {_KINDS[manifest.backend]} ({file_size(dump.size)}, schema {manifest.schema_revision}) to "
        f"{directory}; `ragbot restore` rebuilds the search index from it\n"
    )
    key = settings.secrets_key_file()
    if key.exists():
        out.write(f"keep {key} safe apart from the backup: the Slack tokens in it are sealed with that key\n")
    return 0
