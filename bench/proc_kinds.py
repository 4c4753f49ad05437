"""What a process's open fds and threads are, counted by kind, so a growing count can be traced to its source.

A TCP socket is named by its peer: `in:NAME` for a connection to one of the process's own listening ports,
`out:NAME` for one it opened (NAME from the ports given, else the peer's port), `listen` for a listening socket. A
file is named by its base name (a SQLite database, its -wal and -shm), other fds by their kind (pipe, anon_inode:X,
unix socket). A thread is named by its command name with the digits taken out (`asyncio_N`, `ThreadPoolExecutor-N_N`).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

_LISTEN = "0A"
_SOCKET = re.compile(r"socket:\[(\d+)\]")


def _tcp(pid: int) -> dict[str, tuple[int, int, str]]:
    """Every TCP socket in the process's network namespace, by inode: (local port, remote port, state)."""
    sockets = {}
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
                sockets[inode] = (int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16), state)
    return sockets


def _targets(pid: int) -> list[str]:
    targets = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            targets.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return targets


def listening_ports(pid: int) -> set[int]:
    """The TCP ports the process listens on."""
    tcp = _tcp(pid)
    inodes = {match[1] for target in _targets(pid) if (match := _SOCKET.fullmatch(target))}
    return {local for inode, (local, _, state) in tcp.items() if inode in inodes and state == _LISTEN}


def fd_kinds(pid: int, own_ports: set[int], peers: Mapping[int, str]) -> Counter[str]:
    """The process's fds by kind (see the module's docstring)."""
    tcp = _tcp(pid)
    kinds: Counter[str] = Counter()
    for target in _targets(pid):
        socket = _SOCKET.fullmatch(target)
        if socket is None:
            kinds[Path(target).name if target.startswith("/") else target.split(":[")[0]] += 1
            continue
        found = tcp.get(socket[1])
        if found is None:
            kinds["socket (unix or other)"] += 1
        elif found[2] == _LISTEN:
            kinds["listen"] += 1
        elif found[0] in own_ports:
            kinds[f"in:{peers.get(found[0], found[0])}"] += 1
        else:
            kinds[f"out:{peers.get(found[1], found[1])}"] += 1
    return kinds


def thread_kinds(pid: int) -> Counter[str]:
    """The process's threads by command name, digits taken out."""
    kinds: Counter[str] = Counter()
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            kinds[re.sub(r"\d+", "N", Path(f"/proc/{pid}/task/{task}/comm").read_text().strip())] += 1
    return kinds
