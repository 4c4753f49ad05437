"""Run a command beside one throw-away PostgreSQL cluster, named to it in RAGBOT_TEST_DATABASE_URL.

`make test` runs pytest through this, so the test workers (pytest-xdist starts one session per worker) share
one cluster instead of each starting its own. An existing RAGBOT_TEST_DATABASE_URL is used as it is.

    python scripts/with-test-postgres.py COMMAND [ARG ...]
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.postgres import running_postgres  # needs the checkout on sys.path, above


def main(command: list[str]) -> int:
    """Start the cluster unless one is named already, run `command`, stop the cluster; the command's exit code."""
    if not command:
        print(__doc__, file=sys.stderr)
        return 2
    if os.environ.get("RAGBOT_TEST_DATABASE_URL"):
        return _run(command, dict(os.environ))
    with running_postgres() as url:
        return _run(command, {**os.environ, "RAGBOT_TEST_DATABASE_URL": url})


def _run(command: list[str], env: dict[str, str]) -> int:
    process = subprocess.Popen(command, env=env)
    while True:
        try:
            return process.wait()
        except KeyboardInterrupt:
            # Ctrl-C reached the command too: let it stop its own servers before the cluster goes.
            continue


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
