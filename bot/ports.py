"""What adapters implement: a place to reply (ReplyTarget), an answer being written (ReplyStream), the Adapter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from aiohttp import web

from bot.types import Answer, MessageRef


@dataclass(frozen=True, slots=True)
class ReplyLimits:
    """A target's limits: longest message it takes, and how often one message may be edited (seconds)."""

    max_length: int = 4000
    min_edit_interval: float = 1.0
    # How soon the first text shows: a person should see the answer start well before the first interval ends.
    first_flush: float = 0.3


class ReplyStream(Protocol):
    """An answer being written into the chat: pieces pushed as they come, then finished or failed, once."""

    async def push(self, delta: str) -> None:
        """Add text to the answer (shown no faster than the target allows)."""
        ...

    async def status(self, text: str) -> None:
        """Show that work is under way before any text exists (typing, "searching…")."""
        ...

    async def finish(self, answer: Answer) -> MessageRef | None:
        """Show the whole answer with its sources; returns the message it ended in (None if none could be sent)."""
        ...

    async def fail(self, text: str) -> MessageRef | None:
        """End the answer with what was written so far and `text` (an apology) after it."""
        ...


class ReplyTarget(Protocol):
    """One chat or thread on one platform, bound like bolt's `say`; raises bot.errors platform errors."""

    @property
    def limits(self) -> ReplyLimits:
        """The platform's limits for this chat."""
        ...

    def render(self, markdown: str) -> str:
        """Markdown converted to the markup the platform shows (the identity where it takes Markdown)."""
        ...

    async def send(self, text: str, *, markup: bool = True) -> MessageRef:
        """Post a new message; `markup=False` sends it as plain text."""
        ...

    async def edit(self, ref: MessageRef, text: str, *, markup: bool = True) -> None:
        """Replace a sent message's text."""
        ...

    async def typing(self) -> None:
        """Show a typing or status signal (a no-op where the platform has none)."""
        ...

    def open_stream(self) -> ReplyStream:
        """A stream for one answer: bot.reply.stream.EditingReplyStream, or the platform's native streaming."""
        ...


class Adapter(Protocol):
    """A chat platform's edge: mounts its routes, starts and stops its transport."""

    name: str

    def mount(self, app: web.Application) -> None:
        """Add this adapter's HTTP routes (webhooks, pages) to ragbot's server."""
        ...

    async def start(self) -> None:
        """Start receiving (polling, sockets); return once running."""
        ...

    async def stop(self) -> None:
        """Stop receiving and finish or cancel the work in flight."""
        ...
