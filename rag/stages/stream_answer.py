"""The STREAM_ANSWER stage: the answer's pieces handed on as they come, until the asker stops it."""

from __future__ import annotations

import asyncio

from rag.pipeline import TurnContext


class StreamAnswer:
    """Reads answer, on_text, stop; writes text and outcome (`stopped` when the asker stopped it)."""

    name = "STREAM_ANSWER"

    async def run(self, turn: TurnContext) -> str:
        if turn.answer is None:
            return "skipped=no_answer"
        delivery = _Delivery(turn)
        try:
            if turn.stop is None:
                await delivery.run()
            else:
                await _until_stopped(delivery, turn.stop)
        except _Stopped:
            turn.outcome = "stopped"
        return f"pieces={delivery.pieces} chars={len(turn.text)} outcome={turn.outcome}"


class _Stopped(Exception):
    pass


class _Delivery:
    """The answer's pieces read one by one and handed on; `reading` while it waits on the model."""

    def __init__(self, turn: TurnContext) -> None:
        self._turn = turn
        self.pieces = 0
        self.reading = False

    async def run(self) -> None:
        """Deliver until the answer ends; raises _Stopped once `stop` is set (a piece handed on is never cut)."""
        turn, stop = self._turn, self._turn.stop
        assert turn.answer is not None
        while True:
            if stop is not None and stop.is_set():
                raise _Stopped
            self.reading = True
            try:
                piece = await anext(turn.answer, None)
            finally:
                self.reading = False
            if stop is not None and stop.is_set():
                raise _Stopped  # what came with the stop is not shown
            if piece is None:
                return
            if not piece:
                continue
            turn.text += piece
            self.pieces += 1
            if turn.on_text is not None:
                await turn.on_text(piece)


async def _until_stopped(delivery: _Delivery, stop: asyncio.Event) -> None:
    """Run the delivery in a task of its own; when `stop` is set while it waits on the model, cancel it at once.

    One task per answer, not one per piece: racing every piece against the stop cost ~20 µs a piece
    (bench/turn_cpu.py). Stopped while a piece is being handed on, the delivery ends before it reads the next.
    """
    task = asyncio.ensure_future(delivery.run())
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done() and delivery.reading:
            # The model is cut off mid-token; its stream is closed so the provider stops generating too.
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise _Stopped
        await task
    finally:
        stopped.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
