"""The soak's Slack people: each question a new thread, a message mentioning the bot, delivered as a signed event.

What each thread shows is read at the wire: the fake tells the soak of every post, stream call and update it
accepted, and the thread's text is then what the fake shows of the bot's replies (joined, as the concurrency
bench reads them). A question ends when that text is its final and no reply is still streaming.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from typing import Any

import aiohttp

from adapters.slack.app import EVENTS_PATH
from bench.concurrency_slack import expected_text
from bench.conversations import question
from bench.soak_ledger import Asked, Crowd
from fakes.base import Json
from fakes.slack import FakeSlackAPI, events
from fakes.slack.wire import Ctx, MethodHandler

TEAM = "T0SOAK"
TOKEN = "xoxb-soak"
SECRET = "soak-signing-secret"
_CREATING = ("chat.postMessage", "chat.startStream")
_SHOWING = (*_CREATING, "chat.appendStream", "chat.stopStream", "chat.update")

# A thread: (channel, the ts of the person's message that started it).
ThreadKey = tuple[str, str]
Watcher = Callable[[str, Json, Json], None]


class WatchedSlack(FakeSlackAPI):
    """FakeSlackAPI that tells `watch` (method, parameters, result) of each showing call it accepted."""

    def __init__(self, watch: Watcher, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name in _SHOWING:
            handler, token_kind = self._methods[name]
            self._methods[name] = (self._watched(name, handler, watch), token_kind)

    @staticmethod
    def _watched(name: str, handler: MethodHandler, watch: Watcher) -> MethodHandler:
        async def watched(ctx: Ctx) -> Json:
            result = await handler(ctx)
            watch(name, ctx.params, result)
            return result

        return watched


class SlackThreads:
    """The fake Web API and, per thread, the question being answered and the bot's replies in it."""

    def __init__(self, timeout: float) -> None:
        self.fake = WatchedSlack(self._shown)
        self.fake.add_workspace(TEAM, bot_token=TOKEN, bot_user_id=events.BOT_USER_ID, bot_id="B0SOAK")
        self.url = ""
        self.timeout = timeout
        self._asking: dict[ThreadKey, Asked] = {}
        self._replies: dict[ThreadKey, list[str]] = {}
        self._owners: dict[tuple[str, str], ThreadKey] = {}
        self._http: aiohttp.ClientSession | None = None

    def settings(self) -> dict[str, str]:
        """`ragbot serve`'s Slack settings: the fake's Web API, the bot token and the signing secret."""
        return {"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_BASE_URL": self.fake.base_url}

    def _shown(self, method: str, params: Json, result: Json) -> None:
        at = time.monotonic()
        channel, ts = str(result["channel"]), str(result["ts"])
        if method in _CREATING:
            key: ThreadKey | None = (channel, str(params.get("thread_ts")))
            if key in self._asking:
                self._replies[key].append(ts)
                self._owners[(channel, ts)] = key
        else:
            key = self._owners.get((channel, ts))
        asked = self._asking.get(key) if key is not None else None
        if asked is None or key is None:
            return
        shown = [self.fake.message(channel, reply) for reply in self._replies[key]]
        asked.saw("".join(reply.text for reply in shown), at, complete=not shown[-1].streaming)

    async def ask(self, asked: Asked, channel: str, user: str) -> None:
        """Post the person's mention as a signed event to `url` and wait for its thread's final (or the timeout)."""
        if self._http is None:
            self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout))
        text = question(asked.number)
        ts = self.fake.user_message(TEAM, channel, user, f"<@{events.BOT_USER_ID}> {text}")
        event = events.app_mention(channel=channel, user=user, text=text, team=TEAM, ts=ts)
        body = events.json_body(events.envelope(event, team_id=TEAM))
        key = (channel, ts)
        self._asking[key], self._replies[key] = asked, []
        asked.sent = time.monotonic()
        try:
            async with asyncio.timeout(self.timeout):
                headers = events.signed_headers(body, SECRET)
                async with self._http.post(self.url + EVENTS_PATH, data=body, headers=headers) as response:
                    if response.status != 200:
                        asked.fail(f"event POST answered {response.status}")
                await asked.ended.wait()
        except TimeoutError:
            asked.fail(f"no final within {self.timeout:g} s")
        except aiohttp.ClientError as exc:
            asked.fail(f"event POST {type(exc).__name__}: {exc}"[:160])
        finally:
            del self._asking[key]
            for reply in self._replies.pop(key):
                self._owners.pop((channel, reply), None)

    async def close(self) -> None:
        """Close the events client."""
        if self._http is not None:
            await self._http.close()
            self._http = None


class SlackPeople(Crowd[str]):
    """People of one workspace, each question a new thread in one of its channels."""

    where = "slack"

    def __init__(self, threads: SlackThreads, people: int, channels: int, rng: random.Random) -> None:
        super().__init__([f"U0SOAK{index:05d}" for index in range(people)], rng)
        self._threads = threads
        self._channels = [f"C0SOAK{index:03d}" for index in range(channels)]
        self._rng = rng

    def expected(self, number: int) -> str:
        """The final as a person reads it in Slack: the answer, then the sources block's line."""
        return expected_text(number)

    async def ask_as(self, asked: Asked, person: str) -> None:
        """The person mentions the bot in a channel at random."""
        await self._threads.ask(asked, self._rng.choice(self._channels), person)
