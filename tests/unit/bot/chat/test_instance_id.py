"""A process's name among the others fits where it is stored whole: message.instance and lease names (64)."""

from __future__ import annotations

import socket

import pytest

from bot.chat.instances import INSTANCE_PREFIX, new_instance_id


def test_a_long_host_name_still_gives_a_name_that_fits_a_lease_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: "ragbot-" + "x" * 200 + ".internal.example.com")
    name = new_instance_id()
    assert len(INSTANCE_PREFIX + name) <= 64
    assert name.startswith("ragbot-xxx")


def test_two_processes_on_one_host_get_different_names() -> None:
    assert new_instance_id() != new_instance_id()
