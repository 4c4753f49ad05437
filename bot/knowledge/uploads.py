"""Uploaded files on disk: named within the file system's limits, kept only until their job ends.

An upload is saved as <data>/uploads/<random folder>/<its name> and read by its job; once the job has succeeded
or failed (after its last attempt) nothing reads it again, so the folder goes with it. A restart sweeps what a
stopped process left behind.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import time
from pathlib import Path, PurePath

from storage.records import JobRecord
from storage.repos.jobs import JobRepo

log = logging.getLogger(__name__)

_SAFE_NAME = re.compile(r"[^\w.\- ]+")
# Linux, macOS and Windows file systems hold names of up to 255 bytes; a few are left for the suffix's dot.
MAX_NAME_BYTES = 240
# A suffix longer than this is no file type ("report.final-version-2"): it is cut with the rest of the name.
_MAX_SUFFIX_BYTES = 16
_FINISHED = ("succeeded", "failed")
_UPLOAD_KINDS = ("upload", "faq")
# A folder this new may belong to an upload being saved right now, whose job is not stored yet.
_GRACE_SECONDS = 600.0
# Jobs that ended since a folder that new was saved are among the newest few hundred.
_RECENTLY_ENDED = 500


def upload_name(name: str, max_bytes: int = MAX_NAME_BYTES) -> str:
    """The name an upload is saved under: its base name with only word characters, dots, dashes and spaces (no
    path, nothing a shell or another system reads specially), cut to `max_bytes` of UTF-8 on a character boundary
    with its extension kept (85 Chinese characters fill 255 bytes, so a longer name failed to save)."""
    name = _SAFE_NAME.sub("_", PurePath(name).name).strip(" .") or "upload"
    if len(name.encode()) <= max_bytes:
        return name
    stem, dot, suffix = name.rpartition(".")
    ending = f"{dot}{suffix}"
    if not stem or len(ending.encode()) > _MAX_SUFFIX_BYTES:
        stem, ending = name, ""
    budget = max_bytes - len(ending.encode())
    return stem.encode()[:budget].decode("utf-8", errors="ignore").rstrip(" .") + ending


class UploadFolder:
    """The folder uploads are saved in, and their removal once their jobs end."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def holds(self, source: str) -> bool:
        """Whether a job's source is a file saved here (a job for a file named on the command line is not)."""
        path = Path(source)
        return path.parent.parent == self.root and path.parent.name != ""

    async def discard(self, job: JobRecord) -> None:
        """Remove the upload of a job that has ended: a job listener."""
        if job.status in _FINISHED and job.kind in _UPLOAD_KINDS and self.holds(job.source):
            await asyncio.to_thread(_remove_folder, Path(job.source).parent)

    async def sweep(self, jobs: JobRepo) -> int:
        """Remove the uploads of ended jobs, and those no job names, left by a process that stopped; how many."""
        unfinished = {job.source for job in await jobs.recent(statuses=("queued", "running"), limit=None)}
        ended = {job.source for job in await jobs.recent(statuses=_FINISHED, limit=_RECENTLY_ENDED)}
        return await asyncio.to_thread(self._sweep, unfinished, ended)

    def _sweep(self, unfinished: set[str], ended: set[str]) -> int:
        if not self.root.is_dir():
            return 0
        removed = 0
        cutoff = time.time() - _GRACE_SECONDS
        for folder in self.root.iterdir():
            if not folder.is_dir():
                continue
            sources = {str(path) for path in folder.iterdir()}
            if sources & unfinished:
                continue
            if not sources & ended and folder.stat().st_mtime > cutoff:
                continue
            _remove_folder(folder)
            removed += 1
        if removed:
            log.info("uploads=swept count=%d", removed)
        return removed


def _remove_folder(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
