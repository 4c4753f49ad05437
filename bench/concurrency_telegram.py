"""(t) of bench.concurrency: 200 Telegram conversations at once, through the real adapter, flood limits on (issue 9).

`ragbot serve` runs in a subprocess with TELEGRAM_BOT_TOKEN set, so the real TelegramAdapter (python-telegram-bot,
long polling) talks to FakeTelegramBotAPI in the bench process with Telegram's limits on: about 1 message/s per chat
(bursts of 3), 20 a minute per group, 30/s per bot; a 429 carries retry_after in whole seconds. The model is the
bench's FakeOpenAI (known answer per ticket, 50 deltas/s). Half the conversations are private chats (answers stream
as drafts, then one sendMessage); the other half are forum topics spread over --groups supergroups, each question
mentioning the bot (answers stream by editing one message every 3 s). `--group-layout mentions` asks plain mentions
instead: since issue 24 each is a conversation of its own (a group is keyed by reply chain), as a topic is, and at
most four answers of one group are written at once. Every update is queued at one instant and fetched by the
adapter's getUpdates.

Everything is read at the wire: a draft, sendMessage or editMessageText the fake accepted is "visible" at the time
the fake took it, as the plain text Telegram shows (its HTML parse). A 429 is "waited out" when the conversation
that got it made no further flooded call to that chat before retry_after had passed.

    .venv/bin/python -m bench.concurrency --scenarios t [--conversations 200] [--groups 20] [--repeats 1]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from adapters.telegram.render import to_telegram_html
from adapters.telegram.reply import GROUP_LIMITS, PRIVATE_LIMITS
from bench.conversations import RUN_TIMEOUT, SOURCE_TITLE, known_answer, question, streams_by_ticket
from bench.figures import Figures, Seen, merge_runs, record_timings
from bench.process_stats import BurstWatch
from bench.report import ms_at, spread, top
from bench.serving import log_since, serving, warning_key
from bot.types import Answer, SourceLink
from bot.words import messages
from bot.words.catalogue import languages
from bot.words.messages import answer_with_sources
from fakes.base import Json
from fakes.openai_api import FakeOpenAI, StreamedReply
from fakes.telegram import (
    BotMessage,
    BotRequest,
    Draft,
    FakeTelegramBotAPI,
    HtmlParseError,
    Throttle,
    parse_html,
)

# The goals of issue 9: a token shows within the chat's interval + 300 ms (drafts 1 s, group edits 3 s).
PRIVATE_GOAL = 1.3
GROUP_GOAL = 3.3
# Calls that post or change what a chat shows, the ones Telegram's flood control counts (Bot FAQ).
_FLOODED = frozenset({"sendmessage", "editmessagetext", "editmessagereplymarkup", "sendmessagedraft"})
# After every final shows, how long the feedback buttons may take (FeedbackStream waits up to 3 x 10 s).
_BUTTONS_WAIT = 40.0
_FIRST_USER = 50_000_000
_FIRST_GROUP = -1_009_000_000_000


@dataclass(slots=True)
class Place:
    """Where one conversation happens: its chat, its forum topic, and the question's message id."""

    number: int
    chat_id: int
    thread_id: int | None
    private: bool
    question_id: int = 0
    # The bot's messages replying to the question, oldest first, once the burst is over.
    answers: list[BotMessage] = field(default_factory=list)


@dataclass
class TelegramFigures(Figures):
    """One Telegram scenario's results: Figures, and what the Bot API saw."""

    rows: ClassVar[list[tuple[str, Callable[[Any], str]]]]
    layout: str = ""
    lags_private: list[float] = field(default_factory=list)
    lags_group: list[float] = field(default_factory=list)
    first_after_model_private: list[float] = field(default_factory=list)
    first_after_model_group: list[float] = field(default_factory=list)
    calls: Counter[str] = field(default_factory=Counter)
    throttles: Counter[str] = field(default_factory=Counter)
    not_waited: Counter[str] = field(default_factory=Counter)
    others_inside: int = 0
    # Flood-counted calls made while a bot-wide (global) 429 wait was running, and how many of those got a 429.
    in_global_wait: int = 0
    in_global_wait_refused: int = 0
    examples: list[str] = field(default_factory=list)
    missing_buttons: int = 0
    extra_messages: Counter[str] = field(default_factory=Counter)
    accepted_per_second: list[int] = field(default_factory=list)
    attempted_per_second: list[int] = field(default_factory=list)
    # Answers the model was writing in each second (first to last delta), and what their throttles ask for.
    streaming: list[int] = field(default_factory=list)
    wanted_per_second: list[float] = field(default_factory=list)
    # Time between a private chat's successive draft tries while the model writes (the design: 1 s).
    draft_gaps: list[float] = field(default_factory=list)
    log_lines: Counter[str] = field(default_factory=Counter)


def _within(lags: list[float], goal: float) -> str:
    return f"{sum(lag <= goal for lag in lags) / len(lags):.0%}" if lags else "n/a"


def _rate(busy: list[int] | list[float]) -> str:
    return f"{sum(busy) / len(busy):.1f} / {max(busy):g}" if busy else "n/a"


def _lag_max(lags: list[float]) -> str:
    return f"{spread(lags)} / {ms_at(lags, 1.0)}"


TelegramFigures.rows = [
    ("private (drafts): model token -> visible, p50 / p95 / max (ms)", lambda f: _lag_max(f.lags_private)),
    (f"... within {PRIVATE_GOAL:g} s", lambda f: _within(f.lags_private, PRIVATE_GOAL)),
    ("groups (edits): model token -> visible, p50 / p95 / max (ms)", lambda f: _lag_max(f.lags_group)),
    (f"... within {GROUP_GOAL:g} s", lambda f: _within(f.lags_group, GROUP_GOAL)),
    ("all: p95 of each burst (ms)", lambda f: ", ".join(ms_at(run.lags, 0.95) for run in f.repeats or [f])),
    ("all: while turns still queued or retrieving, p50 / p95", lambda f: spread(f.lags_retrieving)),
    ("all: once every turn was streaming, p50 / p95", lambda f: spread(f.lags_streaming)),
    ("tokens never shown", lambda f: str(f.missing_tokens)),
    ("first visible text - model's first token, private p50 / p95 (ms)", lambda f: spread(f.first_after_model_private)),
    ("... group p50 / p95 (ms)", lambda f: spread(f.first_after_model_group)),
    ("first visible text minus the model's TTFT, from the update, p50 / p95", lambda f: spread(f.first_visible)),
    ("update queued -> request at the model, p50 / p95 (ms)", lambda f: spread(f.to_model)),
    ("model's TTFT measured at the fake, p50 / p95 (ms)", lambda f: spread(f.model_ttft)),
    ("fake's deltas late on their 50/s schedule, p95 (ms)", lambda f: ms_at(f.pace, 0.95)),
    ("finals complete and exact", lambda f: f"{f.exact} / {f.conversations}"),
    ("finals without feedback buttons", lambda f: str(f.missing_buttons)),
    ("other bot messages (not the answer)", lambda f: str(sum(f.extra_messages.values()))),
    ("Bot API calls, all", lambda f: str(sum(f.calls.values()))),
    ("... by method", lambda f: top(f.calls, 6)),
    ("answers being written at once, mean / max", lambda f: _rate(f.streaming)),
    ("... edits/drafts their intervals ask for per second, mean / max", lambda f: _rate(f.wanted_per_second)),
    ("private chat's draft tries while the model writes, gap p50 / p95 (ms)", lambda f: spread(f.draft_gaps)),
    ("flood-counted calls tried per second, mean / max", lambda f: _rate(f.attempted_per_second)),
    ("... accepted per second, mean / max", lambda f: _rate(f.accepted_per_second)),
    ("429s, all", lambda f: str(sum(f.throttles.values()))),
    ("... by limit and method", lambda f: top(f.throttles, 6)),
    ("calls by the conversation that got a 429, before its retry_after", lambda f: str(sum(f.not_waited.values()))),
    ("... by 429 -> next call", lambda f: top(f.not_waited, 4)),
    ("calls by other topics of a chat inside its chat/group 429 wait", lambda f: str(f.others_inside)),
    (
        "calls by anyone during a bot-wide (global) 429 wait / of them refused",
        lambda f: f"{f.in_global_wait} / {f.in_global_wait_refused}",
    ),
    ("service log lines WARNING+", lambda f: top(f.log_lines, 6)),
    ("RSS before the burst (MB)", lambda f: f"{f.memory.before:.0f}" if f.memory else "n/a"),
    ("peak RSS during the burst (MB)", lambda f: f"{f.memory.burst_peak:.0f}" if f.memory else "n/a"),
    ("peak RSS, whole process life (MB)", lambda f: f"{f.memory.lifetime_peak:.0f}" if f.memory else "n/a"),
    ("service CPU s / wall s of the burst", lambda f: f"{f.cpu_seconds:.1f} / {f.wall:.1f}"),
    ("bench event-loop lag p50 / p95 / max (ms)", lambda f: f"{spread(f.loop_lag)} / {ms_at(f.loop_lag, 1.0)}"),
]


def expected_plain(number: int) -> str:
    """Ticket `number`'s final as a person reads it: the answer and its source, rendered, as Telegram parses it."""
    answer = Answer(text=known_answer(number), sources=(SourceLink(1, SOURCE_TITLE),))
    return parse_html(to_telegram_html(answer_with_sources(answer)))[0].strip()


def plain_text(params: Json) -> str | None:
    """The text a send, edit or draft (its parameters) asked Telegram to show, as shown; None if Telegram would
    refuse its markup."""
    text = str(params.get("text") or "")
    if str(params.get("parse_mode") or "").upper() == "HTML":
        try:
            text = parse_html(text)[0]
        except HtmlParseError:
            return None
    return text.strip()


# --- one burst ------------------------------------------------------------------------------------------------


class _TelegramScenario:
    """Conversations as Telegram updates for the adapter of a `ragbot serve` process."""

    def __init__(self, fake: FakeTelegramBotAPI, model: FakeOpenAI, pid: int, layout: str, log: Path) -> None:
        self.fake = fake
        self.model = model
        self.layout = layout
        self._watch = BurstWatch(pid, "the `ragbot serve` process")
        self._log = log

    def places(self, numbers: list[int], private: int, groups: int) -> list[Place]:
        """The first `private` numbers in private chats, the rest spread evenly over `groups` new supergroups."""
        places = [Place(n, _FIRST_USER + n, None, True) for n in numbers[:private]]
        rest = numbers[private:]
        for index, number in enumerate(rest):
            # Group ids come from the burst's first ticket, so every burst starts with fresh flood windows.
            chat = _FIRST_GROUP - rest[0] - index % max(groups, 1)
            places.append(Place(number, chat, number if self.layout == "topics" else None, False))
        return places

    def _update(self, place: Place) -> dict[str, Any]:
        fake = self.fake
        user = fake.user(_FIRST_USER + place.number, f"Person {place.number}", None)
        text = question(place.number)
        if place.private:
            return fake.private_message(text, user=user)
        if place.thread_id is not None:
            return fake.topic_message(text, thread_id=place.thread_id, chat_id=place.chat_id, user=user)
        return fake.group_message(text, chat_id=place.chat_id, user=user)

    async def burst(self, name: str, numbers: list[int], private: int, groups: int) -> TelegramFigures:
        """Queue one question per number at the same instant and measure until every answer has settled."""
        fake = self.fake
        places = self.places(numbers, private, groups)
        updates = [self._update(place) for place in places]
        for place, update in zip(places, updates, strict=True):
            place.question_id = update["message"]["message_id"]
        self.model.streamed.clear()
        marks = len(fake.requests), len(fake.throttled), len(fake.draft_log), self._log.stat().st_size
        self._watch.start()
        started = self._watch.started
        for update in updates:
            fake.queue_update(update)
        await self._settle(places)
        figures = TelegramFigures(name, len(places), layout=self.layout)
        await self._watch.stop(figures)
        self._analyse(figures, places, started, marks)
        return figures

    async def _settle(self, places: list[Place]) -> None:
        """Wait until each conversation shows a final (or something that is not a step towards it), then buttons."""
        expected = {place.number: expected_plain(place.number) for place in places}

        def answers(place: Place) -> list[BotMessage]:
            return [
                message
                for message in self.fake.bot_messages(place.chat_id, place.thread_id)
                if message.reply_to == place.question_id
            ]

        # A queue notice is not an end: a conversation's own line, or a group's, past its cap of answers at once.
        counts = range(1, len(places) + 1)
        notices = {messages.queued(count, lang) for count in counts for lang in languages()}
        notices |= {messages.busy_place(count, lang) for count in counts for lang in languages()}
        notices |= {done(lang) for done in (messages.queue_done, messages.busy_done) for lang in languages()}

        def settled(place: Place) -> bool:
            shown = [message.text for message in answers(place) if message.text not in notices]
            want = expected[place.number]
            # Only a prefix of the final is a step towards it; anything else (an apology) is an end too.
            return bool(shown) and (shown[-1] == want or not want.startswith(shown[-1]))

        async def until(predicate: Callable[[], bool], within: float) -> None:
            # Polled, not fake.wait_for: that runs the predicate on every call, on the loop that serves the fakes.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(within):
                    while not predicate():  # noqa: ASYNC110
                        await asyncio.sleep(0.25)

        await until(lambda: all(settled(place) for place in places), RUN_TIMEOUT)
        await until(lambda: all(answers(p) and answers(p)[-1].reply_markup for p in places), _BUTTONS_WAIT)
        # A quiet second: no call of any kind but the held getUpdates.
        while True:
            count = len(self.fake.requests)
            await asyncio.sleep(1.0)
            if all(request.method == "getUpdates" for request in self.fake.requests[count:]):
                break
        for place in places:
            place.answers = answers(place)

    def _analyse(
        self, figures: TelegramFigures, places: list[Place], started: float, marks: tuple[int, int, int, int]
    ) -> None:
        fake = self.fake
        requests = fake.requests[marks[0] :]
        drafts = fake.draft_log[marks[2] :]
        figures.calls = Counter(request.method for request in requests)
        figures.log_lines = Counter(key for line in log_since(self._log, marks[3]) if (key := warning_key(line)))
        owners = _owners(requests, places)
        rejected = _match_throttles(requests, fake.throttled[marks[1] :])
        _check_waits(figures, requests, rejected, owners, started)
        accepted = [index for index in owners if index not in rejected]
        figures.accepted_per_second = _per_second([requests[index].time for index in accepted], started)
        figures.attempted_per_second = _per_second([requests[index].time for index in owners], started)
        records = streams_by_ticket(self.model)
        interval = 1 / self.model.tokens_per_second
        last_request = max((record.received for record in records.values()), default=0.0)
        _demand(figures, places, records, started)
        mine: dict[int, list[BotRequest]] = {}
        for index in accepted:
            if (owner := owners[index]) is not None:
                mine.setdefault(owner.number, []).append(requests[index])
        _gaps(figures, requests, owners, records)
        for place in places:
            person = Seen(place.number, started=started)
            person.shown = _shown(place, mine.get(place.number, []), drafts)
            want = expected_plain(place.number)
            final = place.answers[-1] if place.answers else None
            person.final = final.text if final else None
            figures.missing_buttons += final is None or final.reply_markup is None
            for extra in place.answers[:-1]:
                figures.extra_messages[extra.text[:60]] += 1
            record = records.get(place.number)
            if record is None:
                figures.mismatches.append(f"#{place.number}: the model was never asked; final={person.final!r}")
                continue
            lags = record_timings(figures, person, record, interval=interval, last_request=last_request, edited=True)
            (figures.lags_private if place.private else figures.lags_group).extend(lags)
            if person.shown:
                first = person.shown[0][0] - record.sent[0]
                (figures.first_after_model_private if place.private else figures.first_after_model_group).append(first)
            prefixes = all(want.startswith(text) for _, text in person.shown)
            if person.final == want and prefixes:
                figures.exact += 1
            else:
                figures.mismatches.append(f"#{place.number}: prefixes={prefixes} final={person.final!r}")


def _owners(requests: list[BotRequest], places: list[Place]) -> dict[int, Place | None]:
    """Each flood-counted call (by index) and the conversation it was made for (None: not one of these)."""
    # Keyed as the calls' parameters come (Any): chat ids and message ids.
    private: dict[Any, Place] = {place.chat_id: place for place in places if place.private}
    by_question: dict[Any, Place] = {(place.chat_id, place.question_id): place for place in places}
    by_message: dict[Any, Place] = {
        (place.chat_id, message.message_id): place for place in places for message in place.answers
    }
    owners: dict[int, Place | None] = {}
    for index, request in enumerate(requests):
        if request.method.lower() not in _FLOODED:
            continue
        chat = request.params.get("chat_id")
        if request.method == "sendMessageDraft":
            owners[index] = private.get(chat)
        elif request.method == "sendMessage":
            reply = request.params.get("reply_parameters")
            owners[index] = by_question.get((chat, reply.get("message_id"))) if isinstance(reply, dict) else None
        else:
            owners[index] = by_message.get((chat, request.params.get("message_id")))
    return owners


def _shown(place: Place, accepted: list[BotRequest], drafts: list[Draft]) -> list[tuple[float, str]]:
    """(time, text) of every draft and every send or edit of the answer message the fake accepted, in order."""
    final = place.answers[-1] if place.answers else None
    shown = [(draft.time, draft.text.strip()) for draft in drafts if place.private and draft.chat_id == place.chat_id]
    if final is None:
        return sorted(shown)
    sends = [request for request in accepted if request.method == "sendMessage"]
    # Accepted sends made the place's messages in order; only the answer's own (the last) counts, not a notice.
    if len(sends) == len(place.answers):
        shown.append((sends[-1].time, plain_text(sends[-1].params) or ""))
    for request in accepted:
        is_final = request.method == "editMessageText" and request.params.get("message_id") == final.message_id
        if is_final and (text := plain_text(request.params)) is not None:
            shown.append((request.time, text))
    return sorted(shown)


def _check_waits(
    figures: TelegramFigures,
    requests: list[BotRequest],
    rejected: dict[int, Throttle],
    owners: dict[int, Place | None],
    started: float,
) -> None:
    """Count 429s by limit and method, and the flood-counted calls to the same chat before retry_after passed."""
    by_chat: dict[Any, list[int]] = {}
    for index in owners:
        by_chat.setdefault(requests[index].params.get("chat_id"), []).append(index)
    for index, throttle in rejected.items():
        request = requests[index]
        figures.throttles[f"{throttle.scope} {request.method}"] += 1
        got, until = owners.get(index), throttle.time + throttle.retry_after
        same_chat = by_chat[request.params.get("chat_id")]
        for later in same_chat[bisect.bisect_right(same_chat, index) :]:
            call = requests[later]
            if call.time >= until:
                break
            if owners[later] is got:
                outcome = "429 again" if later in rejected else "accepted"
                figures.not_waited[f"{throttle.scope} {request.method} -> {call.method} ({outcome})"] += 1
                if len(figures.examples) < 12:
                    figures.examples.append(
                        f"#{got.number if got else '?'} {request.method} 429 ({throttle.scope}, retry_after "
                        f"{throttle.retry_after}) at +{throttle.time - started:.2f} s, then {call.method} "
                        f"{call.time - throttle.time:.2f} s later"
                    )
            elif throttle.scope in ("chat", "group"):
                figures.others_inside += 1
    waits = sorted((t.time, t.time + t.retry_after) for t in rejected.values() if t.scope == "global")
    starts = [begin for begin, _ in waits]
    ends = list(itertools.accumulate((end for _, end in waits), max))
    for index in owners:
        at = requests[index].time
        # Inside some wait when the latest end among the waits begun before this call is still ahead.
        begun = bisect.bisect_left(starts, at) - 1
        if begun >= 0 and at < ends[begun]:
            figures.in_global_wait += 1
            figures.in_global_wait_refused += index in rejected


def _match_throttles(requests: list[BotRequest], throttles: list[Throttle]) -> dict[int, Throttle]:
    """Index of the request each 429 answered: the fake records the request, then (with no await) its 429."""
    times = [request.time for request in requests]
    matched: dict[int, Throttle] = {}
    for throttle in throttles:
        index = bisect.bisect_right(times, throttle.time) - 1
        while index >= 0 and (
            requests[index].method != throttle.method or requests[index].params.get("chat_id") != throttle.chat_id
        ):
            index -= 1
        if index >= 0:
            matched[index] = throttle
    return matched


def _demand(figures: TelegramFigures, places: list[Place], records: dict[int, StreamedReply], started: float) -> None:
    """Per second of the burst: answers being written, and the calls their edit intervals would make (1/s, 1/3 s)."""
    seconds = int(max((record.sent[-1] for record in records.values()), default=started) - started) + 1
    figures.streaming, figures.wanted_per_second = [0] * seconds, [0.0] * seconds
    for place in places:
        record = records.get(place.number)
        if record is None:
            continue
        interval = PRIVATE_LIMITS.min_edit_interval if place.private else GROUP_LIMITS.min_edit_interval
        for second in range(int(record.sent[0] - started), int(record.sent[-1] - started) + 1):
            figures.streaming[second] += 1
            figures.wanted_per_second[second] = round(figures.wanted_per_second[second] + 1 / interval, 1)


def _gaps(
    figures: TelegramFigures,
    requests: list[BotRequest],
    owners: dict[int, Place | None],
    records: dict[int, StreamedReply],
) -> None:
    """Gaps between each private chat's successive draft tries (429s included) while its answer is written."""
    tries: dict[int, list[float]] = {}
    for index, owner in owners.items():
        if owner is not None and requests[index].method == "sendMessageDraft":
            tries.setdefault(owner.number, []).append(requests[index].time)
    for number, times in tries.items():
        if (record := records.get(number)) is not None:
            during = [at for at in times if record.sent[0] <= at <= record.sent[-1]]
            figures.draft_gaps.extend(later - earlier for earlier, later in itertools.pairwise(during))


def _per_second(times: list[float], started: float) -> list[int]:
    """Calls in each whole second from `started` to the last call."""
    if not times:
        return []
    counts = [0] * (int(max(times) - started) + 1)
    for at in times:
        counts[int(at - started)] += 1
    return counts


def _merged(name: str, runs: list[TelegramFigures]) -> TelegramFigures:
    """The bursts' figures as one: lists joined, counts added, the memory peaks kept."""
    merged = TelegramFigures(name, sum(run.conversations for run in runs), layout=runs[0].layout, repeats=list(runs))
    return merge_runs(merged, runs, keep=("name", "conversations", "layout", "repeats"))


# --- the run --------------------------------------------------------------------------------------------------


async def telegram_run(env: dict[str, str], model: FakeOpenAI, args: argparse.Namespace, work: Path) -> list[Figures]:
    """Scenario (t): a warm-up, one private and one group conversation alone, then `repeats` bursts."""
    count = args.conversations
    private = count // 2
    print(
        f"(t) {count} Telegram conversations: {private} private, {count - private} in {args.groups} groups "
        f"({args.group_layout}), flood limits on ({args.bot_per_second}/s per bot)",
        flush=True,
    )
    async with FakeTelegramBotAPI(limits_on=True, global_per_second=args.bot_per_second) as fake:
        telegram_env = {
            **env,
            "TELEGRAM_BOT_TOKEN": fake.token,
            "TELEGRAM_API_BASE_URL": fake.base_url,
            "TELEGRAM_FILE_BASE_URL": fake.base_file_url,
            # Hundreds of made-up people and groups: listing them all would only lengthen the command line.
            "TELEGRAM_ALLOW_EVERYONE": "true",
        }
        async with serving(telegram_env, work) as (_, process):
            await fake.wait_for(lambda: fake.polling, timeout=30)
            scenario = _TelegramScenario(fake, model, process.pid, args.group_layout, work / "serve.log")
            warm = await scenario.burst("warm-up", [0], 1, 0)
            if warm.exact != 1:
                raise SystemExit(f"the Telegram warm-up turn was not answered as expected: {warm.mismatches}")
            per_bot = f", {args.bot_per_second}/s per bot" if args.bot_per_second != 30 else ""
            label = f"(t) Telegram, {args.group_layout}{per_bot}"
            alone = [
                await scenario.burst(f"{label}, 1 private alone", [1], 1, 0),
                await scenario.burst(f"{label}, 1 group alone", [2], 0, 1),
            ]
            runs = []
            for repeat in range(args.repeats):
                first = 3 + repeat * count
                runs.append(await scenario.burst(label, list(range(first, first + count)), private, args.groups))
                run = runs[-1]
                print(
                    f"  burst {repeat + 1}: {run.wall:.0f} s, private p95 {ms_at(run.lags_private, 0.95)} ms, "
                    f"group p95 {ms_at(run.lags_group, 0.95)} ms, exact {run.exact}/{run.conversations}, "
                    f"429s {sum(run.throttles.values())}",
                    flush=True,
                )
    figures: list[Figures] = [*alone, _merged(f"{label}, {count} at once", runs)]
    for result in figures:
        assert isinstance(result, TelegramFigures)
        for line in result.examples[:6]:
            print(f"  {result.name}: not waited: {line}")
    return figures
