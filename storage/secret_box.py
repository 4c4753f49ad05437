"""Secrets kept in the database (Slack tokens) sealed with keys kept outside it: a Fernet key ring in a file.

The file (`secrets.key` in the data dir, beside the web session key) holds one key a line, the newest first:
the newest seals, every one opens. It is made on first use, readable by its owner only. A sealed value is
marked with a prefix, so a value written before sealing existed is still read as it is, and sealed when it is
next saved or when the keys are rotated.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from storage.errors import StorageError
from storage.private_files import private_dir

log = logging.getLogger(__name__)

KEY_FILE: Final = "secrets.key"
SEALED: Final = "fernet:"
"""The prefix of a sealed value (a Fernet token follows it); a value without it was stored before sealing."""


class SecretUnreadable(StorageError):
    """A sealed value that no key of the ring opens: the key file was replaced or lost, or another host wrote it."""


def _write_keys(path: Path, keys: Sequence[bytes]) -> None:
    """Replace the key file at once (a reader sees the old ring or the new, never half of one), owner-only."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as file:
        file.write(b"".join(key + b"\n" for key in keys))
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)


class KeyRing:
    """The key file: read again whenever it changes, so a rotation by `ragbot secrets rotate` reaches a running
    service before the old key is dropped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: tuple[int, int] | None = None
        self._keys: tuple[bytes, ...] = ()
        self._fernet: MultiFernet | None = None

    @classmethod
    def in_dir(cls, data_dir: Path) -> KeyRing:
        """The ring kept in `data_dir`, made (with the dir, both owner-only) on first use."""
        return cls.at(data_dir / KEY_FILE)

    @classmethod
    def at(cls, path: Path) -> KeyRing:
        """The ring kept in the file `path`, made (with its dir, both owner-only) on first use."""
        private_dir(path.parent)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            if stat.S_IMODE(path.stat().st_mode) & 0o077:
                os.chmod(path, 0o600)
                log.warning("secrets_key=%s was readable by others: now owner-only", path)
        else:
            with os.fdopen(fd, "wb") as file:
                file.write(Fernet.generate_key() + b"\n")
            log.info("secrets_key=%s created", path)
        return cls(path)

    @property
    def keys(self) -> tuple[bytes, ...]:
        """The keys, newest first."""
        self._load()
        return self._keys

    def fernet(self) -> MultiFernet:
        """Seals with the newest key, opens with any."""
        self._load()
        assert self._fernet is not None
        return self._fernet

    def write(self, keys: Sequence[bytes]) -> None:
        """Replace the ring with `keys` (newest first)."""
        if not keys:
            raise ValueError("a key ring needs a key")
        for key in keys:
            Fernet(key)  # refuses a malformed key before it is written
        _write_keys(self.path, keys)
        self._seen = None

    def _load(self) -> None:
        found = self.path.stat()
        seen = (found.st_mtime_ns, found.st_size)
        if seen == self._seen:
            return
        keys = tuple(line.strip() for line in self.path.read_bytes().splitlines() if line.strip())
        if not keys:
            raise SecretUnreadable(f"the key file {self.path} holds no key")
        try:
            self._fernet = MultiFernet([Fernet(key) for key in keys])
        except ValueError as exc:
            raise SecretUnreadable(f"the key file {self.path} holds a malformed key") from exc
        self._keys, self._seen = keys, seen


class SecretBox:
    """Seals and opens the secrets stored in the database with a KeyRing."""

    def __init__(self, ring: KeyRing) -> None:
        self.ring = ring

    def seal(self, plain: str) -> str:
        """`plain` sealed with the newest key ("" stays "": nothing to hide, and no key needed to read it)."""
        if not plain:
            return plain
        return SEALED + self.ring.fernet().encrypt(plain.encode()).decode()

    def open(self, stored: str) -> str:
        """The plain value of a stored one: a sealed value opened, a value from before sealing as it is."""
        if not is_sealed(stored):
            return stored
        try:
            return self.ring.fernet().decrypt(stored.removeprefix(SEALED).encode()).decode()
        except InvalidToken as exc:
            raise SecretUnreadable(
                f"a stored Slack token does not open with the keys in {self.ring.path}: was the file replaced, "
                "or the database written by another host (copy its key file here)?"
            ) from exc

    def reseal(self, stored: str) -> str:
        """A stored value sealed with the newest key (a plain one sealed, a sealed one re-sealed)."""
        return self.seal(self.open(stored))


def is_sealed(stored: str) -> bool:
    """Whether a stored value was sealed (else it is plain, from before sealing)."""
    return stored.startswith(SEALED)
