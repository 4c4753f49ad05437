"""`ragbot secrets rotate`: a new key for the secrets stored in the database, every stored token sealed with it."""

from __future__ import annotations

import argparse
import sys

from cryptography.fernet import Fernet

from bot.app.settings import Settings
from storage.db import Database
from storage.repos.slack_installs import SlackInstallRepo
from storage.secret_box import KeyRing, SecretBox, SecretUnreadable


async def run_secrets(settings: Settings, args: argparse.Namespace) -> int:
    """Run a `ragbot secrets` subcommand (only `rotate` so far)."""
    assert args.secrets_command == "rotate"
    return await rotate(settings)


async def rotate(settings: Settings) -> int:
    """A new key first in the ring, every stored token sealed with it, then the older keys dropped.

    Each step leaves the ring able to open everything stored, so a stop at any point loses nothing: run it
    again. A running service reads the ring again when the file changes.
    """
    ring = KeyRing.at(settings.secrets_key_file())
    old = ring.keys
    ring.write([Fernet.generate_key(), *old])
    database = Database(settings.database())
    await database.open()
    try:
        sealed = await SlackInstallRepo(database, box=SecretBox(ring)).reseal_all()
        await database.compact()
    except SecretUnreadable as exc:
        print(f"ragbot: {exc} Nothing was dropped: {ring.path} still holds every key.", file=sys.stderr)
        return 1
    finally:
        await database.close()
    ring.write(ring.keys[:1])
    print(f"Rotated the secrets key in {ring.path}: {sealed} Slack installation(s) sealed with the new key.")
    return 0
