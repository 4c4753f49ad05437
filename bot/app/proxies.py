"""Who sent a request: forwarding headers believed from trusted proxies only, and refused where ragbot is local.

Public: a request from a trusted proxy takes its client address (X-Forwarded-For, the nearest hop the proxies did
not add), scheme (X-Forwarded-Proto) and host (X-Forwarded-Host) from the proxy; anyone else's such headers are
ignored and the peer is the client. Local: a request that came through a proxy, or names a host that is not this
machine (DNS rebinding), is refused, since local means no token guards the chat.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Final

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from yarl import URL

from bot.settings_base import Network
from bot.words import messages

log = logging.getLogger(__name__)


FORWARDING_HEADERS: Final = ("Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-IP")


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip().removeprefix("[").split("]")[0])
    except ValueError:
        return None


def _trusted(text: str | None, proxies: tuple[Network, ...]) -> bool:
    address = _address(text or "")
    return address is not None and any(address in network for network in proxies)


def _last(request: web.Request, header: str) -> str:
    """The value the nearest proxy wrote: the last of a comma-separated list."""
    return request.headers.get(header, "").split(",")[-1].strip()


def forwarded_client(chain: str, peer: str, proxies: tuple[Network, ...]) -> str:
    """The client in an X-Forwarded-For chain: the nearest hop not itself a trusted proxy (a forged left part is
    never reached); the peer when the chain is empty or breaks before one."""
    client = peer
    for hop in reversed([hop.strip() for hop in chain.split(",") if hop.strip()]):
        address = _address(hop)
        if address is None:
            break
        client = str(address)
        if not any(address in network for network in proxies):
            break
    return client


def trusting(proxies: tuple[Network, ...]) -> Middleware:
    """The middleware of a public listener: requests from `proxies` as their client sent them."""

    @web.middleware
    async def forwarded(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not _trusted(request.remote, proxies):
            return await handler(request)
        client = forwarded_client(request.headers.get("X-Forwarded-For", ""), request.remote or "", proxies)
        scheme = _last(request, "X-Forwarded-Proto").lower()
        host = _last(request, "X-Forwarded-Host")
        forwarded = request.clone(
            remote=client,
            scheme=scheme if scheme in ("http", "https") else request.scheme,
            host=host if host and _valid_host(host) else request.host,
        )
        return await handler(forwarded)

    return forwarded


def _valid_host(host: str) -> bool:
    try:
        return URL(f"http://{host}").raw_host is not None and "/" not in host and "@" not in host
    except ValueError:
        return False


def is_local_host(host: str) -> bool:
    """Whether a Host header names this machine (localhost, *.localhost or a loopback address)."""
    try:
        name = (URL(f"http://{host}").raw_host or "").lower().rstrip(".")
    except ValueError:
        return False
    if name == "localhost" or name.endswith(".localhost"):
        return True
    address = _address(name)
    return address is not None and address.is_loopback


@web.middleware
async def local_only(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The middleware of a local listener: only this machine's own browsers and tools, never through a proxy."""
    forwarded = [header for header in FORWARDING_HEADERS if header in request.headers]
    if forwarded or not is_local_host(request.host):
        log.warning(
            "http=refused reason=%s host=%r note=%r",
            "forwarded" if forwarded else "host",
            request.host,
            "ragbot is local; behind a proxy set RAGBOT_PUBLIC=true and WEB_ACCESS_TOKEN",
        )
        return web.json_response({"error": messages.SERVED_LOCALLY}, status=403)
    return await handler(request)
