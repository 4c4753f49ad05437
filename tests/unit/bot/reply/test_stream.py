"""EditingReplyStream over a recording ReplyTarget in virtual time: throttle, coalescing, splits, errors, final."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.errors import DeliveryFailed, MarkupRejected, MessageGone, PlatformRateLimited
from bot.ports import ReplyLimits, ReplyStream
from bot.reply.split import split_reply
from bot.reply.stream import EditingReplyStream
from bot.types import Answer, MessageRef, SourceLink
from bot.words.messages import answer_with_sources

INTERVAL = 1.0
FIRST_FLUSH = 0.3


class FakeClock:
    """Virtual time: `sleep(d)` returns once no other sleeper is due sooner, with the clock moved to its deadline."""

    def __init__(self) -> None:
        self.now = 0.0
        self._deadlines: list[float] = []
        self._registered = 0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        deadline = self.now + max(seconds, 0.0)
        self._deadlines.append(deadline)
        self._registered += 1
        try:
            while True:
                # Let every other task run up to its own next sleep before deciding who is due first:
                # a task that has just been woken may be about to register an earlier deadline.
                registered = self._registered
                for _ in range(5):
                    await asyncio.sleep(0)
                if registered != self._registered:
                    continue
                if deadline <= min(self._deadlines) or deadline <= self.now:
                    self.now = max(self.now, deadline)
                    return
        finally:
            self._deadlines.remove(deadline)


@dataclass(frozen=True, slots=True)
class Call:
    """One send or edit as the platform saw it."""

    kind: str
    ref: str
    text: str
    markup: bool
    at: float


class RecordingTarget:
    """A ReplyTarget that records what reaches the chat and raises the platform errors a test scripts."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.max_length = 4000
        self.render_with: Callable[[str], str] = lambda markdown: markdown
        self.refuses_markup: Callable[[str], bool] = lambda text: False
        self.failures: dict[int, Exception] = {}  # attempt number -> the error that attempt raises
        self.busy_until = float("-inf")  # every attempt before this time gets a 429
        self.retry_after = 5.0
        self.deleted: set[str] = set()
        self.attempts: list[Call] = []
        self.calls: list[Call] = []
        self.typings: list[float] = []
        self.shown: dict[str, tuple[str, bool]] = {}
        self.problems: list[str] = []
        self.hold: asyncio.Event | None = None  # while set up and not yet set, calls wait "on the network"
        self._in_flight = 0

    @property
    def limits(self) -> ReplyLimits:
        return ReplyLimits(max_length=self.max_length, min_edit_interval=INTERVAL, first_flush=FIRST_FLUSH)

    def render(self, markdown: str) -> str:
        return self.render_with(markdown)

    async def send(self, text: str, *, markup: bool = True) -> MessageRef:
        self._attempt("send", "", text, markup)
        await self._network()
        ref = f"m{len(self.shown) + 1}"
        self.shown[ref] = (text, markup)
        self.calls.append(Call("send", ref, text, markup, self.clock.now))
        return MessageRef(ref)

    async def edit(self, ref: MessageRef, text: str, *, markup: bool = True) -> None:
        self._attempt("edit", ref.id, text, markup)
        await self._network()
        if ref.id in self.deleted:
            raise MessageGone(ref.id)
        if self.shown[ref.id] == (text, markup):
            self.problems.append(f"no-op edit of {ref.id}")
        self.shown[ref.id] = (text, markup)
        self.calls.append(Call("edit", ref.id, text, markup, self.clock.now))

    async def typing(self) -> None:
        self.typings.append(self.clock.now)

    def open_stream(self) -> ReplyStream:
        return EditingReplyStream(self, clock=self.clock, sleep=self.clock.sleep)

    def texts(self) -> list[str]:
        """What each message of the answer shows now, in order."""
        return [text for ref, (text, _) in self.shown.items() if ref not in self.deleted]

    async def _network(self) -> None:
        self._in_flight += 1
        if self._in_flight > 1:
            self.problems.append("calls overlapped")
        try:
            if self.hold is not None:
                await self.hold.wait()
        finally:
            self._in_flight -= 1

    def _attempt(self, kind: str, ref: str, text: str, markup: bool) -> None:
        if not text.strip():
            self.problems.append("empty message")
        if len(text) > self.max_length:
            self.problems.append(f"{len(text)} chars over {self.max_length}")
        number = len(self.attempts)
        self.attempts.append(Call(kind, ref, text, markup, self.clock.now))
        if (error := self.failures.get(number)) is not None:
            raise error
        if self.clock.now < self.busy_until:
            raise PlatformRateLimited(self.retry_after)
        if markup and self.refuses_markup(text):
            raise MarkupRejected(text)


class RecordingObserver:
    """A StreamObserver that counts."""

    def __init__(self) -> None:
        self.seen: list[float] = []
        self.edits = 0
        self.limited = 0
        self.lost = 0

    def first_visible(self, seconds: float) -> None:
        self.seen.append(seconds)

    def edit_sent(self) -> None:
        self.edits += 1

    def rate_limited(self) -> None:
        self.limited += 1

    def undelivered(self) -> None:
        self.lost += 1


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def target(clock: FakeClock) -> Iterator[RecordingTarget]:
    target = RecordingTarget(clock)
    yield target
    assert target.problems == []


@pytest.fixture
def observer() -> RecordingObserver:
    return RecordingObserver()


@pytest.fixture
def stream(target: RecordingTarget, clock: FakeClock, observer: RecordingObserver) -> EditingReplyStream:
    return EditingReplyStream(target, clock=clock, sleep=clock.sleep, observer=observer)


async def write(stream: ReplyStream, clock: FakeClock, deltas: Sequence[str], every: float = 0.25) -> History:
    """Push `deltas` `every` seconds apart, as a model would."""
    history = History()
    for delta in deltas:
        await stream.push(delta)
        history.append((clock.now, history.text + delta))
        await clock.sleep(every)
    return history


class History(list[tuple[float, str]]):
    """(time, text so far) after each push."""

    @property
    def text(self) -> str:
        return self[-1][1] if self else ""

    def at(self, moment: float) -> str:
        """The text pushed by `moment`."""
        return next((text for at, text in reversed(self) if at <= moment), "")


def words(count: int) -> list[str]:
    return [f"w{i} " for i in range(count)]


def squeeze(text: str) -> str:
    return re.sub(r"\s", "", text)


async def test_the_first_text_shows_first_flush_seconds_after_it_arrives(
    stream: EditingReplyStream, target: RecordingTarget, clock: FakeClock, observer: RecordingObserver
) -> None:
    await clock.sleep(2.0)
    await stream.push("Hello")
    await clock.sleep(5.0)
    assert [(call.kind, call.text, call.at) for call in target.calls] == [("send", "Hello", 2.0 + FIRST_FLUSH)]
    assert observer.seen == [pytest.approx(2.0 + FIRST_FLUSH)]
    await stream.finish(Answer("Hello"))


async def test_edits_are_throttled_and_carry_the_newest_text(
    stream: EditingReplyStream, target: RecordingTarget, clock: FakeClock
) -> None:
    history = await write(stream, clock, words(40), every=0.25)
    streamed = list(target.calls)
    for before, after in pairwise(streamed):
        assert round(after.at - before.at, 9) >= INTERVAL
    for call in streamed:
        assert call.text == history.at(call.at).rstrip()
    assert len(streamed) <= clock.now / INTERVAL + 1
    assert await stream.finish(Answer(history.text)) == MessageRef("m1")
    assert target.texts() == [history.text.rstrip()]


@pytest.mark.parametrize("delta", ["", " ", "\n\n", "\t \n"])
async def test_an_edit_that_would_not_change_the_message_is_not_sent(
    stream: EditingReplyStream, target: RecordingTarget, clock: FakeClock, observer: RecordingObserver, delta: str
) -> None:
    await write(stream, clock, ["Hello", delta, delta], every=2.0)
    assert await stream.finish(Answer("Hello")) == MessageRef("m1")
    assert [call.kind for call in target.calls] == ["send"]
    assert observer.edits == 1


async def test_a_429_holds_edits_for_retry_after_then_sends_the_newest_text(
    stream: EditingReplyStream, target: RecordingTarget, clock: FakeClock, observer: RecordingObserver
) -> None:
    target.failures = {1: PlatformRateLimited(3.0)}
    history = await write(stream, clock, words(24), every=0.25)
    limited_at = target.attempts[1].at
    resumed = target.attempts[2]
    assert resumed.at == pytest.approx(limited_at + 3.0)
    assert resumed.text == history.at(resumed.at).rstrip()
    assert observer.limited == 1
    await stream.finish(Answer(history.text))


def as_html(markdown: str) -> str:
    return f"<div>{markdown}</div>"


def from_html(html: str) -> str:
    return html.removeprefix("<div>").removesuffix("</div>")


@pytest.mark.parametrize(
    ("render", "unrender", "first"),
    [
        (str, str, "First paragraph, short.\n\nSecond one is a longer sentence."),
        # Measured rendered: the <div> leaves no room for the second paragraph.
        (as_html, from_html, "First paragraph, short."),
    ],
    ids=["markdown", "html"],
)
async def test_text_past_max_length_continues_in_new_messages(
    target: RecordingTarget,
    clock: FakeClock,
    render: Callable[[str], str],
    unrender: Callable[[str], str],
    first: str,
) -> None:
    # The target's fixture teardown checks every payload, rendered ones too, against max_length.
    target.max_length, target.render_with = 60, render
    stream = target.open_stream()
    text = "First paragraph, short.\n\n" + "Second one is a longer sentence. " * 4 + "\n\nThird paragraph closes it."
    history = await write(stream, clock, re.findall(r"\S+\s*", text))
    ref = await stream.finish(Answer(history.text))
    parts = [unrender(text) for text in target.texts()]
    assert len(parts) > 2
    assert ref == MessageRef(f"m{len(parts)}")
    assert squeeze("".join(parts)) == squeeze(text)
    assert parts[0] == first
    # A message made final is not edited once the next one exists.
    for earlier, later in pairwise(target.shown):
        last_edit = max(call.at for call in target.calls if call.ref == earlier)
        assert last_edit <= min(call.at for call in target.calls if call.ref == later)


async def test_a_code_block_cut_between_messages_is_closed_and_reopened(
    target: RecordingTarget, clock: FakeClock
) -> None:
    target.max_length = 80
    stream = target.open_stream()
    code = [f"x_{i} = compute({i})" for i in range(12)]
    intro = "Run this in the project folder, then restart:"
    text = f"{intro}\n\n```python\n" + "\n".join(code) + "\n```\n\nDone."
    await write(stream, clock, text.splitlines(keepends=True))
    await stream.finish(Answer(text))
    parts = target.texts()
    assert len(parts) > 2
    # Cut before the block rather than inside it, since the intro is long enough to stand alone.
    assert parts[0] == intro
    for part in parts:
        assert len(re.findall(r"^```", part, re.MULTILINE)) % 2 == 0
    assert all(part.startswith("```python\n") for part in parts[1:])
    lines = [line for part in parts for line in part.splitlines() if not line.startswith("```")]
    assert lines == [intro, *code, "", "Done."]


@pytest.mark.parametrize(
    ("text", "limit", "parts"),
    [
        ("x" * 25, 10, ["x" * 10, "x" * 10, "x" * 5]),
        ("see https://example.com/" + "a" * 30, 20, ["see", "https://example.com/", "a" * 20, "a" * 10]),
        ("ab👍🏽👍🏽", 5, ["ab", "👍🏽", "👍🏽"]),
        ("🇫🇷🇫🇷🇫🇷", 6, ["🇫🇷", "🇫🇷", "🇫🇷"]),
        ("👨‍👩‍👧👨‍👩‍👧", 10, ["👨‍👩‍👧", "👨‍👩‍👧"]),
        ("e\u0301" * 6, 5, ["e\u0301e\u0301"] * 3),
        ("😀😀😀", 3, ["😀", "😀", "😀"]),
        ("a\ud83d\ude00\ud83d\ude00", 4, ["a\ud83d\ude00", "\ud83d\ude00"]),
        ("Hi there. Bye now.", 12, ["Hi there.", "Bye now."]),
        ("", 10, []),
        (" \n\t ", 10, []),
    ],
    ids=[
        *("long-word", "url", "skin-tone", "flags", "zwj-family", "combining"),
        *("emoji", "surrogates", "sentence", "empty", "blank"),
    ],
)
def test_split_reply_cuts_at_boundaries_and_never_inside_a_character(text: str, limit: int, parts: list[str]) -> None:
    assert split_reply(text, lambda part: utf16(part) <= limit) == parts


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


PIECES = ["word", "longer words", " ", "\n", "\n\n", ". ", "👍🏽", "e\u0301", "🇫🇷", "中文。", "x" * 30]


@given(pieces=st.lists(st.sampled_from(PIECES), max_size=60), limit=st.integers(min_value=12, max_value=80))
def test_split_reply_parts_fit_and_keep_all_the_text(pieces: list[str], limit: int) -> None:
    text = "".join(pieces)
    parts = split_reply(text, lambda part: utf16(part) <= limit)
    assert all(part == part.strip() and part and utf16(part) <= limit for part in parts)
    assert squeeze("".join(parts)) == squeeze(text)


async def test_refused_markup_is_sent_plain_and_tried_again_on_the_final_edit(
    stream: EditingReplyStream, target: RecordingTarget, clock: FakeClock
) -> None:
    target.render_with = lambda markdown: f"<p>{markdown}</p>"
    target.refuses_markup = lambda text: text.count("*") % 2 == 1
    await write(stream, clock, ["Hello *wor", "ld* and", " more"], every=2.0)
    assert [(call.text, call.markup) for call in target.calls] == [
        ("Hello *wor", False),
        ("Hello *world* and", False),
        ("Hello *world* and more", False),
    ]
    assert sum(attempt.markup for attempt in target.attempts) == 1
    await stream.finish(Answer("Hello *world* and more."))
    assert target.calls[-1] == Call("edit", "m1", "<p>Hello *world* and more.</p>", True, clock.now)


async def test_a_deleted_message_is_sent_again_and_the_answer_continues_there(
    stream: EditingReplyStream, target: RecordingTarget, clock: FakeClock
) -> None:
    await write(stream, clock, ["Hello"], every=2.0)
    target.deleted.add("m1")
    await write(stream, clock, [" world", "!"], every=2.0)
    assert await stream.finish(Answer("Hello world!")) == MessageRef("m2")
    assert [(call.kind, call.ref, call.text) for call in target.calls] == [
        ("send", "m1", "Hello"),
        ("send", "m2", "Hello world"),
        ("edit", "m2", "Hello world!"),
    ]


async def test_delivery_failed_stops_all_attempts_and_counts_undelivered(
    stream: EditingReplyStream, target: RecordingTarget, clock: FakeClock, observer: RecordingObserver
) -> None:
    target.failures = {1: DeliveryFailed("bot removed")}
    history = await write(stream, clock, words(20))
    assert await stream.finish(Answer(history.text)) is None
    assert len(target.attempts) == 2
    assert observer.lost == 1


@pytest.mark.parametrize(
    ("deltas", "shown"),
    [
        (["Partial ", "answer "], "Partial answer\n\nSorry, something broke."),
        ([], "Sorry, something broke."),
        (["  ", "\n"], "Sorry, something broke."),
    ],
    ids=["after-text", "nothing-written", "only-whitespace"],
)
async def test_fail_ends_with_the_text_so_far_and_the_apology(
    stream: EditingReplyStream, target: RecordingTarget, clock: FakeClock, deltas: list[str], shown: str
) -> None:
    await write(stream, clock, deltas)
    assert await stream.fail("Sorry, something broke.") == MessageRef("m1")
    assert target.texts() == [shown]


async def test_a_stopped_answer_gets_a_final_edit_with_its_sources(
    stream: EditingReplyStream, target: RecordingTarget, clock: FakeClock
) -> None:
    await write(stream, clock, ["The VPN ", "client is"], every=2.0)
    answer = Answer("The VPN client is", (SourceLink(1, "VPN guide", url="https://wiki/vpn"),), "stopped")
    assert await stream.finish(answer) == MessageRef("m1")
    assert target.texts() == [answer_with_sources(answer)]


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        (Answer("   "), []),
        (Answer(" \n ", (SourceLink(1, "Guide"),)), ["**Sources**\n- [1] Guide"]),
    ],
    ids=["blank", "blank-with-sources"],
)
async def test_a_blank_answer_sends_only_what_there_is(
    stream: EditingReplyStream, target: RecordingTarget, observer: RecordingObserver, answer: Answer, shown: list[str]
) -> None:
    ref = await stream.finish(answer)
    assert target.texts() == shown
    assert ref == (MessageRef("m1") if shown else None)
    assert observer.lost == 0


async def test_the_final_edit_waits_out_a_storm_of_429s(
    stream: EditingReplyStream, target: RecordingTarget, clock: FakeClock, observer: RecordingObserver
) -> None:
    history = await write(stream, clock, words(8))
    target.busy_until = clock.now + 30.0
    assert await stream.finish(Answer(history.text, (SourceLink(1, "Guide"),))) == MessageRef("m1")
    assert target.calls[-1].at >= target.busy_until
    assert target.texts() == [f"{history.text.rstrip()}\n\n**Sources**\n- [1] Guide"]
    assert observer.limited >= 6
    assert observer.lost == 0


async def test_the_final_edit_gives_up_at_the_deadline(
    target: RecordingTarget, clock: FakeClock, observer: RecordingObserver
) -> None:
    stream = EditingReplyStream(target, clock=clock, sleep=clock.sleep, observer=observer, final_deadline=60.0)
    await write(stream, clock, ["Hello"], every=2.0)
    target.busy_until = float("inf")
    started = clock.now
    assert await stream.finish(Answer("Hello world")) is None
    assert observer.lost == 1
    assert started + 60.0 - target.retry_after <= target.attempts[-1].at <= started + 60.0


async def test_unexpected_errors_are_retried_by_the_final_delivery_with_backoff(
    stream: EditingReplyStream, target: RecordingTarget, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    target.failures = {1: RuntimeError("socket closed")}
    await write(stream, clock, ["Hello", " there", " friend"], every=2.0)
    assert "stream edit=failed" in caplog.text
    assert target.texts() == ["Hello there friend"]
    failures_at = len(target.attempts)
    target.failures = {failures_at: RuntimeError("a"), failures_at + 1: RuntimeError("b")}
    with caplog.at_level(logging.WARNING):
        assert await stream.finish(Answer("Hello there friend.")) == MessageRef("m1")
    times = [attempt.at for attempt in target.attempts[failures_at:]]
    assert [later - earlier for earlier, later in pairwise(times)] == [1.0, 2.0]
    assert target.texts() == ["Hello there friend."]


async def test_finish_and_fail_after_the_end_return_the_same_message_without_sending(
    stream: EditingReplyStream, target: RecordingTarget, clock: FakeClock
) -> None:
    await write(stream, clock, ["Hello"])
    first, second = await asyncio.gather(stream.finish(Answer("Hello!")), stream.finish(Answer("Other")))
    calls = list(target.calls)
    assert first == second == MessageRef("m1")
    assert await stream.fail("Sorry") == MessageRef("m1")
    await stream.push("late text")
    await clock.sleep(5.0)
    assert target.calls == calls
    assert target.texts() == ["Hello!"]


async def test_finish_waits_for_a_call_in_flight_instead_of_racing_it(
    stream: EditingReplyStream, target: RecordingTarget, clock: FakeClock
) -> None:
    target.hold = asyncio.Event()
    await stream.push("Hello")
    await clock.sleep(1.0)
    ending = asyncio.create_task(stream.finish(Answer("Hello world")))
    await clock.sleep(1.0)
    assert [attempt.text for attempt in target.attempts] == ["Hello"]
    target.hold.set()
    assert await ending == MessageRef("m1")
    assert [(call.kind, call.text) for call in target.calls] == [("send", "Hello"), ("edit", "Hello world")]


async def test_status_renews_typing_until_the_first_text_shows(
    stream: EditingReplyStream, target: RecordingTarget, clock: FakeClock
) -> None:
    await stream.status("Searching…")
    await clock.sleep(9.0)
    await stream.push("Hi")
    await clock.sleep(10.0)
    await stream.status("Still here")
    assert target.typings == [0.0, 4.0, 8.0]
    assert target.calls[0].at == pytest.approx(9.0 + FIRST_FLUSH)
    await stream.finish(Answer("Hi"))


async def test_no_background_task_outlives_the_stream(target: RecordingTarget, clock: FakeClock) -> None:
    before = asyncio.all_tasks()
    stream = target.open_stream()
    await stream.status("Searching…")
    await stream.push("Hel")
    await clock.sleep(0.1)
    await stream.push("lo")
    await stream.finish(Answer("Hello"))
    assert asyncio.all_tasks() == before
    assert target.texts() == ["Hello"]


async def test_an_abandoned_stream_stops_showing_text_and_delivers_nothing_more() -> None:
    clock = FakeClock()
    target = RecordingTarget(clock)
    stream = EditingReplyStream(target, clock=clock, sleep=clock.sleep)
    await stream.push("A preview ")
    await clock.sleep(INTERVAL * 2)
    shown = len(target.calls)
    assert shown == 1
    await stream.push("that goes on")
    await stream.abandon()
    await clock.sleep(INTERVAL * 5)
    assert len(target.calls) == shown
    assert await stream.finish(Answer(text="ignored")) is None
    assert len(target.calls) == shown


async def test_a_finish_that_broke_before_delivering_still_lets_fail_say_sorry(
    target: RecordingTarget, clock: FakeClock
) -> None:
    def broken(answer: Answer) -> str:
        raise ValueError("a source the composer cannot format")

    stream = EditingReplyStream(target, clock=clock, sleep=clock.sleep, compose=broken)
    await write(stream, clock, ["Hello"])
    with pytest.raises(ValueError, match="composer"):
        await stream.finish(Answer("Hello!"))
    assert await stream.fail("Sorry, something broke.") == MessageRef("m1")
    assert target.texts() == ["Hello\n\nSorry, something broke."]
