"""One bounded GET to a search provider: a deadline, a byte cap, and its failures as WebSearchError."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import aiohttp

from rag.web.types import WebSearchError

_CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class ProviderLimits:
    """What asking a provider may cost: seconds in all, bytes of answer, results kept."""

    timeout: float = 5.0
    # A results page is ~30-80 kB (DuckDuckGo's HTML page, Google's JSON of 10 items): 2 MB is ample, 50 MB is not.
    max_bytes: int = 2 * 1000 * 1000
    max_results: int = 10


async def get_text(
    session: aiohttp.ClientSession, url: str, params: Mapping[str, str], limits: ProviderLimits, *, provider: str
) -> str:
    """The body of GET `url`, decoded; WebSearchError on a timeout, a status other than 200 or an oversized body."""
    timeout = aiohttp.ClientTimeout(total=limits.timeout)
    try:
        async with session.get(url, params=params, timeout=timeout, allow_redirects=False) as response:
            if response.status != 200:
                raise WebSearchError(
                    f"{provider} answered {response.status}",
                    failure="status",
                    retry_after=_retry_after(response.headers.get("Retry-After")),
                )
            body = await _read(response, limits.max_bytes, provider)
            return body.decode(response.charset or "utf-8", errors="replace")
    except TimeoutError as exc:
        raise WebSearchError(f"{provider} did not answer within {limits.timeout:g}s", failure="timeout") from exc
    except aiohttp.ClientError as exc:
        raise WebSearchError(f"{provider} could not be reached ({type(exc).__name__})", failure="unreachable") from exc


async def _read(response: aiohttp.ClientResponse, max_bytes: int, provider: str) -> bytes:
    if response.content_length is not None and response.content_length > max_bytes:
        raise WebSearchError(f"{provider} sent {response.content_length} bytes, over {max_bytes}", failure="too_large")
    body = bytearray()
    async for chunk in response.content.iter_chunked(_CHUNK):
        body += chunk
        if len(body) > max_bytes:
            raise WebSearchError(f"{provider} sent more than {max_bytes} bytes", failure="too_large")
    return bytes(body)


def _retry_after(header: str | None) -> float | None:
    try:
        return float(header) if header else None
    except ValueError:
        return None
