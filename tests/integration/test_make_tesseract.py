"""`make run` on a machine where Tesseract cannot be installed (another system, no sudo) goes on without OCR and
says so; `make test`, whose OCR tests need it, stops."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.processes import ROOT

# The tools the Makefile and scripts/install-tesseract.sh call, found as on this machine; tesseract is not one.
_TOOLS = ("sh", "make", "id", "grep", "cat", "echo")


@pytest.fixture
def no_tesseract_path(tmp_path: Path) -> str:
    """A PATH with the shell tools, no tesseract, and an apt-get that fails as it does without the rights."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in _TOOLS:
        found = shutil.which(tool)
        assert found is not None, tool
        (bin_dir / tool).symlink_to(found)
    apt_get = bin_dir / "apt-get"
    apt_get.write_text("#!/bin/sh\necho 'E: Could not open lock file - are you root?' >&2\nexit 100\n")
    apt_get.chmod(0o755)
    (bin_dir / "sudo").symlink_to(apt_get)
    return str(bin_dir)


def _make(target: str, path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path}
    return subprocess.run(["make", "-s", target], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_make_run_goes_on_without_ocr_where_tesseract_cannot_be_installed(no_tesseract_path: str) -> None:
    done = _make("tesseract-if-possible", no_tesseract_path)
    assert done.returncode == 0, done.stderr
    assert "ragbot runs without OCR" in done.stdout


def test_make_test_stops_where_tesseract_cannot_be_installed(no_tesseract_path: str) -> None:
    done = _make("tesseract", no_tesseract_path)
    assert done.returncode != 0
    assert "Could not open lock file" in done.stderr
