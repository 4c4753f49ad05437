"""`ragbot chat`: a conversation in the terminal, one turn per input line, with the history chat platforms get."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from typing import BinaryIO, Final, TextIO

from bot.app.services import Services
from bot.cli.ask import answer_turn, cli_manager, new_conversation_key, print_sources, print_stages
from bot.cli.reindex import note_outdated_index
from bot.words import messages
from rag.input_check import decode_user_bytes

log = logging.getLogger(__name__)

NEW_COMMAND: Final = "/new"
QUIT_COMMAND: Final = "/quit"


class _InputLines:
    """Lines of a file descriptor, read by a daemon thread with os.read.

    A blocked read must never hold up the exit: a worker of the default executor would (asyncio.run waits for
    it on 3.11), and a thread blocked in sys.stdin.buffer.readline() holds the buffer's lock, which aborts the
    interpreter at shutdown after Ctrl-C.
    """

    def __init__(self, fd: int) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        threading.Thread(target=self._read, args=(fd,), name="ragbot-chat-input", daemon=True).start()

    def _read(self, fd: int) -> None:
        pending = bytearray()
        try:
            while chunk := os.read(fd, 65536):
                pending += chunk
                while (end := pending.find(b"\n")) >= 0:
                    self._put(bytes(pending[:end]))
                    del pending[: end + 1]
            if pending:
                self._put(bytes(pending))
        except OSError as exc:  # the input broke or was closed: treated as its end
            log.warning("chat=input_closed reason=%s", exc)
        finally:
            self._put(None)

    def _put(self, item: bytes | None) -> None:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:
            log.debug("chat=input_after_exit")  # the chat ended (/quit) while more input was arriving

    async def next(self) -> str | None:
        """The next line without its line end, or None at the end of input."""
        raw = await self._queue.get()
        return None if raw is None else decode_user_bytes(raw).rstrip("\r")


async def run_chat(
    services: Services,
    kb_names: list[str],
    *,
    show_stages: bool = False,
    stdin: BinaryIO | None = None,
    out: TextIO = sys.stdout,
) -> int:
    """Answer each line of `stdin` (a terminal or a pipe) as a turn of one conversation until /quit or its end.

    Everything goes to `out`, stage figures too, so each turn's lines stay together. Input that is not a
    terminal is echoed after the prompt, so the output reads as a transcript.
    """
    kb_ids = [(await services.knowledge.find(name)).id for name in kb_names]
    note_outdated_index(services)
    source = stdin if stdin is not None else sys.stdin.buffer
    interactive = source.isatty()
    manager = cli_manager(services)
    key = new_conversation_key()
    lines = _InputLines(source.fileno())
    if interactive:
        out.write(messages.cli_banner(kb_names) + "\n")
    while True:
        if interactive:
            out.write(messages.CLI_PROMPT)
            out.flush()
        line = await lines.next()
        if line is None:
            break
        if not line.strip():
            continue
        if not interactive:
            out.write(f"{messages.CLI_PROMPT}{line}\n")
        command = line.strip().lower()
        if command == QUIT_COMMAND:
            break
        if command == NEW_COMMAND:
            key = new_conversation_key()
            out.write(messages.CLI_NEW_CONVERSATION + "\n\n")
            continue
        result = await answer_turn(manager, key, line, kb_ids, out)
        if result is not None and result.answer.outcome != "failed":
            print_sources(result, out)
            if show_stages and result.turn is not None:
                out.write("\nStages:\n")
                print_stages(result.turn, out)
        out.write("\n")
        out.flush()
    return 0
