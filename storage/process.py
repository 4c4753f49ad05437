"""This process's identity for rows it owns while it works, and whether another owner is still running."""

from __future__ import annotations

import os
import socket


def this_process() -> str:
    """`host:pid` of this process."""
    return f"{socket.gethostname()}:{os.getpid()}"


def may_be_running(owner: str) -> bool:
    """False only when `owner` is a process of this host that no longer exists; another host's cannot be checked."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
