"""A backup's manifest.json: what its directory holds, with sizes and checksums, written last and atomically.

A backup directory without a manifest is one that never finished; one whose files do not match it was damaged
or changed since. Either is refused before anything is restored.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from storage.errors import BackupError

MANIFEST = "manifest.json"
FORMAT = 1
"""The manifest's own layout; a later layout is refused rather than half understood."""
_READ = 1 << 20


@dataclass(frozen=True, slots=True)
class BackupFile:
    """One file of a backup, as it was written."""

    name: str
    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Manifest:
    """What a backup holds and what made it."""

    ragbot_version: str
    schema_revision: str
    backend: str
    """"sqlite" or "postgresql"."""
    created_at: datetime
    files: tuple[BackupFile, ...]
    dump_tool: str = ""
    """What wrote the dump: "sqlite3 3.40.1" or "pg_dump 15.8" (pg_restore must be at least as new)."""

    def to_json(self) -> str:
        """The manifest as written to disk."""
        body = {"format": FORMAT, **asdict(self), "created_at": self.created_at.isoformat()}
        return json.dumps(body, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str, where: Path) -> Manifest:
        """Read a manifest written by `to_json`; BackupError naming `where` when it is not one."""
        try:
            body: dict[str, Any] = json.loads(text)
            if body.get("format") != FORMAT:
                raise BackupError(f"{where} is of manifest format {body.get('format')!r}, this ragbot reads {FORMAT}")
            return cls(
                ragbot_version=str(body["ragbot_version"]),
                schema_revision=str(body["schema_revision"]),
                backend=str(body["backend"]),
                created_at=datetime.fromisoformat(body["created_at"]),
                files=tuple(BackupFile(str(f["name"]), int(f["size"]), str(f["sha256"])) for f in body["files"]),
                dump_tool=str(body.get("dump_tool", "")),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise BackupError(f"{where} is damaged ({type(exc).__name__}: {exc}): nothing was restored") from exc


def describe_file(path: Path, name: str) -> BackupFile:
    """`path`'s size and SHA-256, recorded under `name`."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as file:
        while block := file.read(_READ):
            digest.update(block)
            size += len(block)
    return BackupFile(name, size, digest.hexdigest())


def write_manifest(directory: Path, manifest: Manifest) -> None:
    """Write manifest.json through a temporary file renamed over it, each flushed to disk first, so a crash leaves
    either no manifest or a whole one."""
    temporary = directory / f".{MANIFEST}.partial"
    try:
        with temporary.open("w", encoding="utf-8") as file:
            file.write(manifest.to_json())
            file.flush()
            os.fsync(file.fileno())
        temporary.chmod(0o600)
        os.replace(temporary, directory / MANIFEST)
    finally:
        temporary.unlink(missing_ok=True)
    sync_directory(directory)


def read_manifest(directory: Path) -> Manifest:
    """The manifest of the backup in `directory`; BackupError when it has none or it cannot be read."""
    path = directory / MANIFEST
    if not directory.is_dir():
        raise BackupError(f"{directory} is not a directory: nothing was restored")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BackupError(
            f"{directory} holds no {MANIFEST}: not a ragbot backup, or one that did not finish "
            "(a backup writes its manifest last); nothing was restored"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BackupError(f"cannot read {path}: {exc}; nothing was restored") from exc
    return Manifest.from_json(text, path)


def verify_files(directory: Path, manifest: Manifest) -> None:
    """Raise BackupError unless every file the manifest lists is there with its recorded size and checksum."""
    for expected in manifest.files:
        path = directory / expected.name
        if Path(expected.name).name != expected.name:
            raise BackupError(f"{directory / MANIFEST} names a file outside its directory: nothing was restored")
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise BackupError(f"{path} is missing (the manifest lists it): nothing was restored") from None
        if size != expected.size:
            raise BackupError(
                f"{path} has {size} bytes where the manifest says {expected.size}: the backup is damaged; "
                "nothing was restored"
            )
        if describe_file(path, expected.name).sha256 != expected.sha256:
            raise BackupError(
                f"checksum mismatch: {path} is not the file the backup wrote (SHA-256 differs from the manifest's); "
                "nothing was restored"
            )


def sync_directory(directory: Path) -> None:
    """Flush `directory`'s entries (a rename, a new file) to disk."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
