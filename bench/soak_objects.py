"""`ragbot serve` with a thread that counts its live objects by type every minute: a soak's debug run (--objects).

After a full collection, every object the garbage collector tracks (containers and instances: dicts, lists,
frames, asyncio tasks and futures, class instances; not str, bytes or int) is counted by its type's module and
name, and one line of JSON per count is appended to SOAK_OBJECTS_FILE. A type whose count climbs with the turns
while the load stays the same is what a leak looks like; `_asyncio.Task` counts the tasks alive. Each count holds
the GIL for a second or so, so a debug run's latencies are not the soak's.

    SOAK_OBJECTS_FILE=objects.jsonl python -m bench.soak_objects serve
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from bot.cli.main import main as ragbot

# The most common types kept per count: a leaking type climbs into them soon enough.
_KEPT = 400


def count_objects() -> Counter[str]:
    """Live gc-tracked objects by `module.qualname` of their type, after a full collection."""
    gc.collect()
    return Counter(f"{type(thing).__module__}.{type(thing).__qualname__}" for thing in gc.get_objects())


def _count_every(path: Path, seconds: float) -> None:
    started = time.monotonic()
    while True:
        counts = count_objects()
        line = {"at": time.monotonic(), "total": sum(counts.values()), "counts": dict(counts.most_common(_KEPT))}
        with path.open("a") as output:
            output.write(json.dumps(line) + "\n")
        time.sleep(max(0.0, seconds - (time.monotonic() - started) % seconds))


def main() -> None:
    """Start the counting thread, then run `ragbot` with this process's arguments."""
    path = Path(os.environ["SOAK_OBJECTS_FILE"])
    every = float(os.environ.get("SOAK_OBJECTS_EVERY", "60"))
    threading.Thread(target=_count_every, args=(path, every), name="soak-objects", daemon=True).start()
    sys.exit(ragbot(sys.argv[1:]))


if __name__ == "__main__":
    main()
