"""The soak's web chat people: browsers with their own cookies (so their own conversation), asking again and again."""

from __future__ import annotations

import asyncio
import random
import time

import aiohttp

from bench.concurrency_web import ask
from bench.conversations import known_answer
from bench.figures import Seen
from bench.soak_ledger import Asked, Crowd


async def open_browser(
    url: str, access_token: str, connector: aiohttp.BaseConnector, limit: aiohttp.ClientTimeout
) -> aiohttp.ClientSession:
    """A browser with its own cookie jar that has opened the access link once (its access and session cookies)."""
    session = aiohttp.ClientSession(
        connector=connector,
        connector_owner=False,
        cookie_jar=aiohttp.CookieJar(unsafe=True),  # cookies for 127.0.0.1 (an IP) are kept only when unsafe
        timeout=limit,
    )
    try:
        async with session.get(f"{url}/", params={"access": access_token}) as response:
            response.raise_for_status()
    except BaseException:
        await session.close()
        raise
    return session


class WebPeople(Crowd[int]):
    """People of the web chat, each a browser of its own posting a question and reading the answer's events."""

    where = "web"

    def __init__(self, url: str, access_token: str, count: int, rng: random.Random, timeout: float) -> None:
        super().__init__(range(count), rng)
        self._url = url
        self._access_token = access_token
        self._timeout = timeout
        self._connector = aiohttp.TCPConnector(limit=0)
        self._browsers: dict[int, aiohttp.ClientSession] = {}

    def expected(self, number: int) -> str:
        """The final's text: the final event carries the answer alone (its sources come apart, checked by `ask`)."""
        return known_answer(number)

    async def ask_as(self, asked: Asked, person: int) -> None:
        """The person's browser posts the question and reads the answer's events to the end."""
        seen = Seen(asked.number)
        try:
            browser = self._browsers.get(person)
            if browser is None:
                limit = aiohttp.ClientTimeout(total=self._timeout)
                browser = self._browsers[person] = await open_browser(
                    self._url, self._access_token, self._connector, limit
                )
            async with asyncio.timeout(self._timeout):
                await ask(self._url, browser, seen)
        except TimeoutError:
            asked.fail(f"no final within {self._timeout:g} s")
        except aiohttp.ClientError as exc:
            asked.fail(f"HTTP {type(exc).__name__}: {exc}"[:160])
        asked.sent = seen.started or time.monotonic()
        for at, text in seen.shown:
            asked.saw(text, at, complete=False)
        if seen.error:
            asked.fail(seen.error)
        elif seen.final is not None and seen.shown:
            # The final event follows the last delta at once; the last delta's time is when it all showed.
            asked.saw(seen.final, seen.shown[-1][0])
        asked.fail(f"no exact final (outcome {seen.outcome or 'none'})")

    async def close(self) -> None:
        """Close every browser."""
        for browser in self._browsers.values():
            await browser.close()
        await self._connector.close()
