"""EventSink: the events a web request streams, taken as they queued up, and its end."""

from __future__ import annotations

import asyncio

from adapters.web.reply import EventSink, encode_events


async def test_events_queued_while_the_response_waited_are_taken_together_in_order() -> None:
    sink = EventSink()
    sink.emit("delta", {"text": "Open "})
    sink.emit("delta", {"text": "9 to 17."})
    assert await sink.take() == ([("delta", {"text": "Open "}), ("delta", {"text": "9 to 17."})], False)


async def test_the_last_events_come_with_the_end_and_nothing_after() -> None:
    sink = EventSink()
    sink.emit("final", {"text": "Open 9 to 17."})
    sink.end()
    assert await sink.take() == ([("final", {"text": "Open 9 to 17."})], True)
    assert await sink.take() == ([], True)


async def test_taking_waits_for_the_next_event() -> None:
    sink = EventSink()
    waiting = asyncio.ensure_future(sink.take())
    await asyncio.sleep(0)
    assert not waiting.done()
    sink.emit("status", {"text": ""})
    assert await asyncio.wait_for(waiting, 5) == ([("status", {"text": ""})], False)


async def test_nothing_is_queued_once_the_browser_is_gone() -> None:
    sink = EventSink()
    sink.closed = True
    sink.emit("delta", {"text": "lost"})
    sink.end()
    assert await sink.take() == ([], True)


def test_events_are_framed_one_after_another_unescaped() -> None:
    framed = encode_events([("delta", {"ref": "m1", "text": "知识 "}), ("done", {})])
    assert framed == 'event: delta\ndata: {"ref": "m1", "text": "知识 "}\n\nevent: done\ndata: {}\n\n'.encode()
