"""Delivering a short bot message (a notice, a command reply) through a target's stream, so its limits apply."""

from __future__ import annotations

from bot.ports import ReplyTarget
from bot.types import Answer


async def deliver_text(target: ReplyTarget, text: str) -> None:
    """Send `text` as one whole answer: the target's stream splits, paces and retries it like any answer."""
    stream = target.open_stream()
    await stream.finish(Answer(text=text))
