"""Files and directories of ragbot's data readable by their owner only (tokens, conversations, uploads)."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)


def private_dir(path: Path) -> None:
    """Make `path` (and its missing parents) readable by its owner only; an existing one is left as it is.

    Only what ragbot creates is narrowed: the directory may be a shared one someone else chose (/tmp, a home).
    """
    missing = [parent for parent in (path, *path.parents) if not parent.exists()]
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)  # mkdir's mode is narrowed by the umask, never widened: say it exactly
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        log.warning("dir=%s mode=%o: others may read it; `chmod 700 %s` keeps them out", path, mode, path)
