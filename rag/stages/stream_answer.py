"""The STREAM_ANSWER stage: the answer's pieces handed on as they come, until the asker stops it or its deadline."""

from __future__ import annotations

import asyncio

from rag.pipeline import TurnContext

STOPPED = "stopped"
TIMED_OUT = "timed_out"


class StreamAnswer:
    """Reads answer, on_text, stop, deadline; writes text and outcome (`stopped` when the asker stopped it,
    `timed_out` when its delivery outlasted the deadline: a model that trickles)."""

    name = "STREAM_ANSWER"

    async def run(self, turn: TurnContext) -> str:
        if turn.answer is None:
            return "skipped=no_answer"
        delivery = _Delivery(turn)
        try:
            if turn.stop is None and turn.deadline is None:
                await delivery.run()
            else:
                await _until_halted(delivery, turn.stop, turn.deadline)
        except _Halted as halted:
            turn.outcome = halted.outcome
        return f"pieces={delivery.pieces} chars={len(turn.text)} outcome={turn.outcome}"


class _Halted(Exception):
    def __init__(self, outcome: str) -> None:
        super().__init__(outcome)
        self.outcome = outcome


class _Delivery:
    """The answer's pieces read one by one and handed on; `reading` while it waits on the model."""

    def __init__(self, turn: TurnContext) -> None:
        self._turn = turn
        self.pieces = 0
        self.reading = False
        # Set once the deadline passed: the delivery ends before it reads the next piece.
        self.timed_out = False

    def _check(self) -> None:
        stop = self._turn.stop
        if stop is not None and stop.is_set():
            raise _Halted(STOPPED)
        if self.timed_out:
            raise _Halted(TIMED_OUT)

    async def run(self) -> None:
        """Deliver until the answer ends; raises _Halted once stopped or past the deadline (a piece handed on is
        never cut)."""
        turn = self._turn
        assert turn.answer is not None
        while True:
            self._check()
            self.reading = True
            try:
                piece = await anext(turn.answer, None)
            finally:
                self.reading = False
            self._check()  # what came with the stop is not shown
            if piece is None:
                return
            if not piece:
                continue
            turn.text += piece
            self.pieces += 1
            if turn.on_text is not None:
                await turn.on_text(piece)


async def _until_halted(delivery: _Delivery, stop: asyncio.Event | None, deadline: float | None) -> None:
    """Run the delivery in a task of its own; when `stop` is set or `deadline` seconds pass while it waits on the
    model, cancel it at once.

    One task per answer, not one per piece: racing every piece against the stop cost ~20 µs a piece
    (bench/turn_cpu.py). Halted while a piece is being handed on, the delivery ends before it reads the next.
    """
    task = asyncio.ensure_future(delivery.run())
    stopped = asyncio.ensure_future(stop.wait()) if stop is not None else None
    try:
        waiting = {task} if stopped is None else {task, stopped}
        await asyncio.wait(waiting, timeout=deadline, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            halted = _Halted(STOPPED if stopped is not None and stopped.done() else TIMED_OUT)
            delivery.timed_out = halted.outcome == TIMED_OUT
            if delivery.reading:
                # The model is cut off mid-token; its stream is closed so the provider stops generating too.
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                raise halted
        await task
    finally:
        if stopped is not None:
            stopped.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
