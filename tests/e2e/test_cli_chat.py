"""`ragbot chat` as a user runs it with piped input, on the session's Weaviate (no model: rule-based rewriting)."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

from harness.processes import run_ragbot

VPN = "# VPN\n\nThe VPN client is installed from the Software Center app on your laptop.\n"
PRINTERS = "# Printers\n\nTo install a printer, open Settings, choose Printers and add the one named on its sticker.\n"


async def _chat(env: dict[str, str], cwd: Path, lines: list[str], *args: str) -> tuple[int, str, str]:
    """Run `ragbot chat ARGS` with `lines` piped to its input: exit code, stdout, stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli.main",
        "chat",
        *args,
        env=env,
        cwd=cwd,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate("".join(f"{line}\n" for line in lines).encode()), 300)
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


def _turns(transcript: str) -> dict[str, list[str]]:
    """Each echoed input line with the output that followed it (a line asked twice keeps both, in order)."""
    turns: dict[str, list[str]] = {}
    for block in re.split(r"^you> ", transcript, flags=re.MULTILINE)[1:]:
        line, _, output = block.partition("\n")
        turns.setdefault(line, []).append(output)
    return turns


def _first_source(output: str) -> str:
    match = re.search(r"^  \[1\] (.+)$", output, flags=re.MULTILINE)
    assert match is not None, output
    return match.group(1)


def _stage(output: str, name: str) -> str:
    match = re.search(rf"^  {name} .*$", output, flags=re.MULTILINE)
    assert match is not None, output
    return match.group(0)


async def test_a_follow_up_is_rewritten_from_the_conversation_and_new_starts_over(
    shared_weaviate_env: dict[str, str], tmp_path: Path
) -> None:
    env = shared_weaviate_env
    (tmp_path / "vpn.md").write_text(VPN)
    (tmp_path / "printers.md").write_text(PRINTERS)
    for args in (("kb", "create", "it"), ("ingest", "vpn.md", "printers.md", "--kb", "it")):
        code, _, err = await run_ragbot(env, tmp_path, *args)
        assert code == 0, err

    lines = [
        "What is the VPN client?",
        "",
        "How do I install it?",
        "/new",
        "How do I install it?",
        "🙂🙂🙂",
        "/quit",
        "never read as a question",
    ]
    code, out, err = await _chat(env, tmp_path, lines, "--kb", "it", "--show-stages")
    assert code == 0, err
    turns = _turns(out)
    assert list(turns) == ["What is the VPN client?", "How do I install it?", "/new", "🙂🙂🙂", "/quit"]

    first = turns["What is the VPN client?"][0]
    assert _first_source(first) == "vpn.md"
    assert "skipped=no_history" in _stage(first, "REWRITE_QUERY")

    follow_up, fresh = turns["How do I install it?"]
    assert "rounds=1" in _stage(follow_up, "LOAD_HISTORY")
    assert "method=rules" in _stage(follow_up, "REWRITE_QUERY")
    assert "searched as: How do I install the VPN client?" in follow_up
    assert "Software Center" in follow_up.split("Sources:")[0]
    assert _first_source(follow_up) == "vpn.md"

    # A new conversation has no history: "it" stays unresolved, and no page fits "install it" well enough to be
    # quoted (the printer page only shares "install"), so the bot says it found nothing rather than guess.
    assert turns["/new"] == ["(new conversation)\n\n"]
    assert "rounds=0" in _stage(fresh, "LOAD_HISTORY")
    assert "skipped=no_history" in _stage(fresh, "REWRITE_QUERY")
    assert "searched as" not in fresh
    assert "outcome=no_match" in _stage(fresh, "CHAT_COMPLETION_STREAM")
    assert "Sources:" not in fresh

    refusal = turns["🙂🙂🙂"][0]
    assert refusal.startswith("I can only answer questions written in words.")
    assert "Sources:" not in refusal
    assert "never read" not in out


async def test_a_chat_about_an_unknown_knowledge_base_says_so(
    shared_weaviate_env: dict[str, str], tmp_path: Path
) -> None:
    code, out, err = await _chat(shared_weaviate_env, tmp_path, ["hello?"], "--kb", "nope")
    assert code == 1
    assert out == ""
    assert "nope" in err
