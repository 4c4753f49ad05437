"""`ragbot restore DIR`: the store replaced by a checked backup, migrated, and every search index rebuilt from it.

Refused, with nothing touched, when the backup is unfinished, damaged, of a newer schema or of another kind of
store, and while a ragbot still runs on this store.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from bot.app.services import Services, build_services
from bot.app.settings import Settings
from bot.chat.instances import INSTANCE_PREFIX
from bot.cli.backup import file_size
from bot.cli.reindex import ProgressBar, reindexer
from bot.errors import UserFacingError
from rag.reindex import ReindexResult
from storage.backup.archive import check_backup, live_leases, restore_database
from storage.backup.manifest import Manifest
from storage.db import head_revision
from storage.errors import BackupError
from storage.process import may_be_running
from storage.weaviate.server import WeaviateServer

_KINDS = {"sqlite": "SQLite store", "postgresql": "PostgreSQL database"}


async def run_restore(
    settings: Settings, directory: Path, *, out: TextIO = sys.stdout, progress: TextIO = sys.stderr
) -> int:
    """Check the backup and that nothing runs, put the store back, then rebuild the index with a progress bar."""
    config = settings.database()
    try:
        manifest = await check_backup(directory, config)
        await _refuse_while_running(settings)
        progress.write(f"restoring {_described(manifest)}\n")
        await restore_database(directory, manifest, config)
    except BackupError as exc:
        raise UserFacingError(str(exc)) from exc
    head = head_revision()
    migrated = f", schema migrated from {manifest.schema_revision} to {head}" if manifest.schema_revision < head else ""
    progress.write(f"the {_KINDS[manifest.backend]} is back{migrated}; rebuilding the search index from it\n")
    async with build_services(settings) as services:
        result = await _rebuild_index(services, progress)
    counts = f"{_counted(result.chunks, 'chunk')}, {_counted(result.faq_questions, 'FAQ question')}"
    out.write(f"restored {directory}: {_counted(len(result.rebuilt), 'knowledge base')} indexed afresh ({counts})\n")
    return 0


def _counted(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _described(manifest: Manifest) -> str:
    made = f"{manifest.created_at:%Y-%m-%d %H:%M:%S} UTC"
    size = file_size(manifest.files[0].size)
    return (
        f"a {_KINDS[manifest.backend]} of {size} made {made} by ragbot {manifest.ragbot_version} "
        f"(schema {manifest.schema_revision}); its files match the manifest"
    )


async def _refuse_while_running(settings: Settings) -> None:
    """A UserFacingError while a ragbot holds the local index's data dir or a `ragbot serve` is alive on the store."""
    if not settings.WEAVIATE_URL and (in_use := WeaviateServer(settings.weaviate_server()).in_use()) is not None:
        raise UserFacingError(
            f"a ragbot (pid {in_use.owner_pid}) is running on {settings.data_dir}: stop it, and any other ragbot "
            "command, before restoring; nothing was restored"
        )
    # An instance's name is host:pid:tag; one of this host whose process is gone died without saying goodbye.
    serving = [
        lease.owner
        for lease in await live_leases(settings.database(), INSTANCE_PREFIX)
        if may_be_running(lease.owner.rpartition(":")[0])
    ]
    if serving:
        raise UserFacingError(
            f"`ragbot serve` is running on this database ({', '.join(sorted(serving))}): stop every instance before "
            "restoring; nothing was restored"
        )


async def _rebuild_index(services: Services, progress: TextIO) -> ReindexResult:
    """Every knowledge base's index objects rebuilt from SQL into a new generation; nothing copied from the old one,
    so the index holds exactly what the restored store holds."""
    bar = ProgressBar(progress, "search index")
    async with services.index_lock.hold() as held:
        try:
            return await reindexer(services).rebuild_all(
                await services.knowledge.all(), bar, before_switch=held.confirm
            )
        finally:
            bar.end()
