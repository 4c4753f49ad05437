"""Fetch a URL for ingestion: public addresses only, redirects checked hop by hop, body streamed under limits."""

from __future__ import annotations

import asyncio
import http
import ipaddress
import logging
import re
import socket
from dataclasses import dataclass
from email.message import Message
from email.utils import collapse_rfc2231_value

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver
from yarl import URL

from rag.errors import DocumentTooLarge, FetchError
from rag.ingest.extractors.damage import reason
from rag.ingest.extractors.limits import format_size

logger = logging.getLogger(__name__)

ALLOWED_NETWORKS_SETTING = "URL_FETCH_ALLOWED_NETWORKS"
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_MB = 1000 * 1000
_SCHEMES = frozenset({"http", "https"})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CHUNK = 64 * 1024
_USER_AGENT = "ragbot (document ingestion)"
# RFC 6052 well-known NAT64 prefix: the last 32 bits are an IPv4 address the gateway connects to.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_UNSAFE_NAME_CHARS = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """Bounds on one fetch: body size, whole-fetch and per-phase time, and redirect hops."""

    max_bytes: int = 50 * _MB
    total_timeout: float = 60.0
    connect_timeout: float = 10.0
    read_idle_timeout: float = 15.0
    max_redirects: int = 5


@dataclass(frozen=True, slots=True)
class FetchedFile:
    """A fetched body with what the server said about it and the URL it finally came from."""

    data: bytes
    filename: str | None
    content_type: str | None
    final_url: str


DEFAULT_FETCH_LIMITS = FetchLimits()
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    """Which addresses fetching may reach: public ones, plus the networks an admin allowed (an intranet)."""

    allowed_networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def allowing(cls, *networks: str) -> AddressPolicy:
        """A policy that also allows these CIDR networks (e.g. "10.0.0.0/8"); ValueError for a bad one."""
        return cls(
            tuple(ipaddress.ip_network(network.strip(), strict=False) for network in networks if network.strip())
        )

    def allows(self, address: str | IPAddress) -> bool:
        """Whether fetching may connect to `address`."""
        ip = ipaddress.ip_address(address.split("%", 1)[0]) if isinstance(address, str) else address
        if is_public_address(ip):
            return True
        return any(ip.version == network.version and ip in network for network in self.allowed_networks)


PUBLIC_ONLY = AddressPolicy()


def is_public_address(address: str | IPAddress) -> bool:
    """Whether `address` is on the public internet: not private, loopback, link-local, multicast or reserved.

    IPv6 forms that carry an IPv4 address (mapped, 6to4, NAT64) are judged by that IPv4 address.
    """
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            return is_public_address(embedded)
    refused = ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast
    return ip.is_global and not (refused or ip.is_reserved or ip.is_unspecified)


def check_address(address: str, policy: AddressPolicy = PUBLIC_ONLY) -> None:
    """Raise FetchError unless fetching from `address` is allowed."""
    if not policy.allows(address):
        raise FetchError(
            f"{address} is not a public address: add its network to {ALLOWED_NETWORKS_SETTING} "
            "to fetch from a private network"
        )


class PublicAddressResolver(AbstractResolver):
    """An aiohttp resolver that hands out only addresses fetching may connect to.

    Checking inside the resolver means the address checked is the address connected to: a DNS answer
    cannot change between the check and the connection (DNS rebinding).
    """

    def __init__(self, *, policy: AddressPolicy = PUBLIC_ONLY, resolver: AbstractResolver | None = None) -> None:
        self._policy = policy
        self._resolver = resolver or ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The addresses of `host` that pass `check_address`; FetchError naming one if none does."""
        results = await self._resolver.resolve(host, port, family)
        allowed = [result for result in results if self._policy.allows(result["host"])]
        if not allowed and results:
            check_address(results[0]["host"], self._policy)
        return allowed

    async def close(self) -> None:
        """Release the wrapped resolver."""
        await self._resolver.close()


async def fetch_url(
    url: str,
    *,
    limits: FetchLimits = DEFAULT_FETCH_LIMITS,
    policy: AddressPolicy = PUBLIC_ONLY,
    session: aiohttp.ClientSession | None = None,
) -> FetchedFile:
    """GET `url` within `limits`, following redirects by hand and checking every hop's scheme and address.

    Without `session` a private one is opened whose resolver checks addresses at connect time. A caller's
    session is used as it is: hosts are then resolved and checked before each request, which cannot
    rule out DNS rebinding; build shared sessions with a PublicAddressResolver.
    """
    target = _parse(url)
    try:
        async with asyncio.timeout(limits.total_timeout):
            if session is not None:
                return await _follow(session, target, limits, policy=policy, resolve_first=True)
            resolver = PublicAddressResolver(policy=policy)
            try:
                async with _open_session(resolver) as own:
                    return await _follow(own, target, limits, policy=policy, resolve_first=False)
            finally:
                await resolver.close()
    except TimeoutError as exc:
        raise FetchError(
            f"{_shown(target)} timed out after {limits.total_timeout:g}s: try again later or upload the file"
        ) from exc


def _open_session(resolver: AbstractResolver) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False)
    return aiohttp.ClientSession(connector=connector, headers={"User-Agent": _USER_AGENT})


async def _follow(
    session: aiohttp.ClientSession, target: URL, limits: FetchLimits, *, policy: AddressPolicy, resolve_first: bool
) -> FetchedFile:
    timeout = aiohttp.ClientTimeout(total=None, connect=limits.connect_timeout, sock_read=limits.read_idle_timeout)
    current = target
    for _ in range(limits.max_redirects + 1):
        await _check_hop(current, policy=policy, resolve=resolve_first)
        try:
            async with session.get(current, allow_redirects=False, timeout=timeout) as response:
                if response.status in _REDIRECTS:
                    current = _next_hop(current, response)
                    continue
                if not 200 <= response.status < 300:
                    raise FetchError(f"{_shown(current)} answered {_status(response)}: check the link")
                data = await _read_body(response, current, limits.max_bytes)
                fetched = FetchedFile(
                    data=data,
                    filename=_filename(response.headers.get("Content-Disposition"), current),
                    content_type=_content_type(response.headers.get("Content-Type")),
                    final_url=str(current),
                )
        except aiohttp.ClientError as exc:
            raise _client_error(exc, current, limits) from exc
        logger.info("url_fetched host=%s bytes=%d", current.host, len(fetched.data))
        return fetched
    raise FetchError(
        f"{_shown(target)} redirected more than {limits.max_redirects} times: link to the final address instead"
    )


def _parse(url: str) -> URL:
    try:
        parsed = URL(url.strip())
    except (ValueError, TypeError) as exc:
        raise FetchError(f"not a valid URL ({reason(exc)}): check the link") from exc
    if parsed.scheme and parsed.scheme not in _SCHEMES:
        raise FetchError(f"cannot fetch {parsed.scheme} URLs: use an http or https link")
    if not parsed.is_absolute() or not parsed.scheme:
        raise FetchError(f"{url!r} is not a full URL: give one starting with http:// or https://")
    return parsed


async def _check_hop(url: URL, *, policy: AddressPolicy, resolve: bool) -> None:
    """Refuse a scheme other than http(s); check a literal address, or every resolved one when asked to."""
    if url.scheme not in _SCHEMES:
        raise FetchError(f"cannot fetch {url.scheme} URLs: use an http or https link")
    host = url.host
    if not host:
        raise FetchError(f"{_shown(url)} has no host name: check the link")
    if _is_address_literal(host):
        # aiohttp connects to an address literal without asking the resolver, so it is checked here.
        check_address(host, policy)
        return
    if resolve:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, url.port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise FetchError(f"could not resolve {host} ({reason(exc)}): check the link") from exc
        for *_, address in infos:
            check_address(str(address[0]), policy)


def _is_address_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _next_hop(current: URL, response: aiohttp.ClientResponse) -> URL:
    location = response.headers.get("Location")
    if not location:
        raise FetchError(f"{_shown(current)} answered {_status(response)} without a Location: check the link")
    try:
        return current.join(URL(location))
    except (ValueError, TypeError) as exc:
        raise FetchError(f"{_shown(current)} redirected to an invalid URL ({reason(exc)}): check the link") from exc


async def _read_body(response: aiohttp.ClientResponse, url: URL, max_bytes: int) -> bytes:
    """The body, read in chunks and abandoned as soon as it passes `max_bytes`."""
    declared = response.content_length
    if declared is not None and declared > max_bytes:
        raise DocumentTooLarge(
            f"{_shown(url)} is {format_size(declared)}, over the limit of {format_size(max_bytes)}: "
            "upload a smaller file"
        )
    body = bytearray()
    async for chunk in response.content.iter_chunked(_CHUNK):
        body += chunk
        if len(body) > max_bytes:
            raise DocumentTooLarge(
                f"{_shown(url)} sent more than the limit of {format_size(max_bytes)}: upload a smaller file"
            )
    return bytes(body)


def _client_error(exc: aiohttp.ClientError, url: URL, limits: FetchLimits) -> FetchError:
    host = url.host or str(url)
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return FetchError(f"could not connect to {host} within {limits.connect_timeout:g}s: try again later")
    if isinstance(exc, aiohttp.SocketTimeoutError):
        return FetchError(f"{host} sent nothing for {limits.read_idle_timeout:g}s: try again later")
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return FetchError(f"could not resolve {host}: check the link")
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return FetchError(f"{host} has an invalid TLS certificate ({reason(exc.certificate_error)}): fix the site")
    if isinstance(exc, aiohttp.ClientConnectorError):
        return FetchError(f"could not connect to {host} ({reason(exc.os_error)}): check the link")
    return FetchError(f"fetching {_shown(url)} failed ({reason(exc)}): try again later")


def _status(response: aiohttp.ClientResponse) -> str:
    phrase = response.reason
    if not phrase:
        try:
            phrase = http.HTTPStatus(response.status).phrase
        except ValueError:
            phrase = ""
    return f"{response.status} {phrase}".strip()


def _filename(disposition: str | None, url: URL) -> str | None:
    """The name from Content-Disposition (filename* in RFC 5987 form included), else the URL's last segment."""
    name = (_disposition_filename(disposition) if disposition else None) or url.name
    # A name is only a label: no folders, no control characters.
    name = _UNSAFE_NAME_CHARS.sub("", name.replace("\\", "/").rsplit("/", 1)[-1]).strip()
    return name or None


def _disposition_filename(disposition: str) -> str | None:
    """filename*= (RFC 5987, any charset) when present, as RFC 6266 says, else filename=."""
    header = Message()
    header["Content-Disposition"] = disposition
    plain: str | None = None
    for key, value in header.get_params(header="content-disposition", failobj=[]):
        if key.lower() != "filename":
            continue
        if isinstance(value, tuple):  # the stdlib hands filename* over as (charset, language, text)
            return collapse_rfc2231_value(value)
        plain = plain or value
    return plain


def _content_type(header: str | None) -> str | None:
    if not header:
        return None
    return header.split(";", 1)[0].strip().lower() or None


def _shown(url: URL) -> str:
    """The URL for a message: no credentials, no query string (either may hold a secret)."""
    try:
        return str(url.with_user(None).with_query(None).with_fragment(None))
    except ValueError:
        return url.host or "the URL"
