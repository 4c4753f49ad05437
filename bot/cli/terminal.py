"""The terminal as a reply target: answers printed as they are written (`ragbot ask` and `ragbot chat`)."""

from __future__ import annotations

from typing import TextIO

from bot.ports import ReplyLimits, ReplyStream
from bot.types import Answer, MessageRef

_TERMINAL = MessageRef("terminal")


class TerminalStream:
    """Writes each piece as it comes; the sources are the caller's to print (with stage figures if asked)."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._written = False
        self._ended = False

    async def push(self, delta: str) -> None:
        """Print a piece of the answer."""
        if delta:
            self._written = True
            self._out.write(delta)
            self._out.flush()

    async def status(self, text: str) -> None:
        """Nothing: a terminal shows the answer's first words soon enough."""

    async def finish(self, answer: Answer) -> MessageRef | None:
        """End the answer's line (printing it whole if nothing was streamed), then its notice."""
        if self._ended:
            return _TERMINAL
        self._ended = True
        if not self._written and answer.text:
            self._out.write(answer.text)
        self._out.write("\n")
        if answer.notice:
            self._out.write(f"({answer.notice.strip('()')})\n")
        self._out.flush()
        return _TERMINAL

    async def fail(self, text: str) -> MessageRef | None:
        """End with the apology on its own line."""
        if self._ended:
            return _TERMINAL
        self._ended = True
        self._out.write(("\n" if self._written else "") + text + "\n")
        self._out.flush()
        return _TERMINAL


class TerminalTarget:
    """A ReplyTarget over a text stream; Markdown is printed as it is."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    @property
    def limits(self) -> ReplyLimits:
        """No length limit, no edit interval: a terminal prints as fast as text comes."""
        return ReplyLimits(max_length=1_000_000, min_edit_interval=0.0, first_flush=0.0)

    def render(self, markdown: str) -> str:
        """Markdown reads well as it is."""
        return markdown

    async def send(self, text: str, *, markup: bool = True) -> MessageRef:
        """Print a message on its own line."""
        self._out.write(text + "\n")
        self._out.flush()
        return _TERMINAL

    async def edit(self, ref: MessageRef, text: str, *, markup: bool = True) -> None:
        """A terminal cannot change what it printed: print the new text."""
        await self.send(text)

    async def typing(self) -> None:
        """Nothing to show."""

    def open_stream(self) -> ReplyStream:
        """A stream that prints pieces as they come."""
        return TerminalStream(self._out)
