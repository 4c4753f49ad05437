"""The STREAM_ANSWER stage: the answer's pieces handed on as they come, until the asker stops it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from rag.pipeline import TurnContext


class StreamAnswer:
    """Reads answer, on_text, stop; writes text and outcome (`stopped` when the asker stopped it)."""

    name = "STREAM_ANSWER"

    async def run(self, turn: TurnContext) -> str:
        if turn.answer is None:
            return "skipped=no_answer"
        pieces = 0
        answer = turn.answer
        try:
            while (piece := await _next_unless_stopped(answer, turn.stop)) is not None:
                if not piece:
                    continue
                turn.text += piece
                pieces += 1
                if turn.on_text is not None:
                    await turn.on_text(piece)
        except _Stopped:
            turn.outcome = "stopped"
        return f"pieces={pieces} chars={len(turn.text)} outcome={turn.outcome}"


class _Stopped(Exception):
    pass


async def _next_unless_stopped(answer: AsyncIterator[str], stop: asyncio.Event | None) -> str | None:
    """The answer's next piece (None at its end); raises _Stopped as soon as `stop` is set, even mid-wait."""
    if stop is not None and stop.is_set():
        raise _Stopped
    if stop is None:
        return await anext(answer, None)
    piece = asyncio.ensure_future(anext(answer, None))
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({piece, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if stop.is_set():
        # The model is cut off mid-token; its stream is closed so the provider stops generating too.
        piece.cancel()
        await asyncio.gather(piece, return_exceptions=True)
        raise _Stopped
    return piece.result()
