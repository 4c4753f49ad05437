"""Fetch a URL for ingestion: public addresses only, redirects checked hop by hop, body streamed under limits."""

from __future__ import annotations

import asyncio
import http
import logging
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message
from email.utils import collapse_rfc2231_value
from urllib.parse import unquote_plus, urlsplit, urlunsplit

import aiohttp
from aiohttp.abc import AbstractResolver
from yarl import URL

from rag.errors import DocumentTooLarge, FetchError
from rag.ingest.addresses import (
    PUBLIC_ONLY,
    AddressPolicy,
    AddressRefused,
    PublicAddressResolver,
    check_address,
    is_address_literal,
    numeric_ipv4,
)
from rag.ingest.extractors.damage import reason
from rag.ingest.extractors.limits import format_size

logger = logging.getLogger(__name__)

_MB = 1000 * 1000
_SCHEMES = frozenset({"http", "https"})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CHUNK = 64 * 1024
_USER_AGENT = "ragbot (document ingestion)"
_UNSAFE_NAME_CHARS = re.compile(r"[\x00-\x1f\x7f]")
# Query parameters that carry a credential: OAuth and API tokens, keys, passwords, signed-URL signatures
# (S3's X-Amz-Signature and X-Amz-Security-Token, Google's X-Goog-Signature, Azure SAS's sig).
_CREDENTIAL_PARAM = re.compile(
    r"token|secret|passw|signature|credential|api[-_]?key|access[-_]?key|private[-_]?key|session"
    r"|^(?:key|sig|sign|pass|pwd|auth|authorization|jwt|hmac|otp|code|ticket|sid)$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """Bounds on one fetch: body size, whole-fetch and per-phase time, and redirect hops."""

    max_bytes: int = 50 * _MB
    total_timeout: float = 60.0
    connect_timeout: float = 10.0
    read_idle_timeout: float = 15.0
    max_redirects: int = 5


@dataclass(frozen=True, slots=True)
class Validators:
    """What a server said identifies the version it sent (ETag, Last-Modified), sent back to ask "changed since?"."""

    etag: str = ""
    last_modified: str = ""

    def headers(self) -> dict[str, str]:
        """The conditional request headers these validators make (none when both are empty)."""
        headers = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


@dataclass(frozen=True, slots=True)
class FetchedFile:
    """A fetched body with what the server said about it and the URL it finally came from.

    `not_modified` is a 304 to a conditional fetch: no body, and the version already held is current.
    """

    data: bytes
    filename: str | None
    content_type: str | None
    final_url: str
    validators: Validators = Validators()
    not_modified: bool = False


DEFAULT_FETCH_LIMITS = FetchLimits()


async def fetch_url(
    url: str,
    *,
    limits: FetchLimits = DEFAULT_FETCH_LIMITS,
    policy: AddressPolicy = PUBLIC_ONLY,
    session: aiohttp.ClientSession | None = None,
    validators: Validators | None = None,
    allowed: Callable[[str], bool] | None = None,
) -> FetchedFile:
    """GET `url` within `limits`, following redirects by hand and checking every hop's scheme and address.

    With `validators` the request is conditional: a 304 comes back as a FetchedFile with `not_modified` set.
    With `allowed`, a hop whose URL it refuses (web search's blacklist) is never requested: FetchError `url_refused`.

    Without `session` a private one is opened whose resolver checks addresses at connect time. A caller's
    session is used as it is: hosts are then resolved and checked before each request, which cannot
    rule out DNS rebinding; build shared sessions with a PublicAddressResolver.
    """
    target = _parse(url)
    try:
        async with asyncio.timeout(limits.total_timeout):
            if session is not None:
                return await _follow(
                    session,
                    target,
                    limits,
                    policy=policy,
                    resolve_first=True,
                    given=url,
                    validators=validators,
                    allowed=allowed,
                )
            resolver = PublicAddressResolver(policy=policy)
            try:
                async with _open_session(resolver) as own:
                    return await _follow(
                        own,
                        target,
                        limits,
                        policy=policy,
                        resolve_first=False,
                        given=url,
                        validators=validators,
                        allowed=allowed,
                    )
            finally:
                await resolver.close()
    except TimeoutError as exc:
        raise FetchError(
            f"{_shown(target)} timed out after {limits.total_timeout:g}s: try again later or upload the file",
            reason="url_timeout",
        ) from exc


def _open_session(resolver: AbstractResolver) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False)
    return aiohttp.ClientSession(connector=connector, headers={"User-Agent": _USER_AGENT})


async def _follow(
    session: aiohttp.ClientSession,
    target: URL,
    limits: FetchLimits,
    *,
    policy: AddressPolicy,
    resolve_first: bool,
    given: str,
    validators: Validators | None = None,
    allowed: Callable[[str], bool] | None = None,
) -> FetchedFile:
    conditional = validators.headers() if validators is not None else {}
    timeout = aiohttp.ClientTimeout(total=None, connect=limits.connect_timeout, sock_read=limits.read_idle_timeout)
    current, previous = target, None
    for _ in range(limits.max_redirects + 1):
        if allowed is not None and not allowed(str(current)):
            raise FetchError(f"{_shown(current)} is not allowed here", reason="url_refused")
        try:
            request_url = await _check_hop(current, policy=policy, resolve=resolve_first)
            async with session.get(
                request_url, allow_redirects=False, timeout=timeout, headers=conditional
            ) as response:
                if response.status in _REDIRECTS:
                    current, previous = _next_hop(current, response), current
                    continue
                if response.status == http.HTTPStatus.NOT_MODIFIED and conditional:
                    assert validators is not None
                    return _not_modified(response, request_url, validators)
                if not 200 <= response.status < 300:
                    raise FetchError(
                        f"{_shown(current)} answered {_status(response)}: check the link",
                        reason="url_status",
                        status=response.status,
                    )
                data = await _read_body(response, current, limits.max_bytes)
                fetched = FetchedFile(
                    data=data,
                    filename=_filename(response.headers.get("Content-Disposition"), current),
                    content_type=_content_type(response.headers.get("Content-Type")),
                    final_url=str(request_url),
                    validators=Validators(response.headers.get("ETag", ""), response.headers.get("Last-Modified", "")),
                )
        except AddressRefused as refusal:
            if previous is None:
                raise refusal.refusing(_shown_as_given(given)) from refusal
            raise refusal.refusing(f"the redirect from {_shown(previous)} to {_shown(current)}") from refusal
        except aiohttp.ClientError as exc:
            raise _client_error(exc, current, limits) from exc
        logger.info("url_fetched host=%s bytes=%d", current.host, len(fetched.data))
        return fetched
    raise FetchError(
        f"{_shown(target)} redirected more than {limits.max_redirects} times: link to the final address instead",
        reason="url_redirects",
    )


def _not_modified(response: aiohttp.ClientResponse, url: URL, sent: Validators) -> FetchedFile:
    # A 304 need not repeat the validators (some servers drop the ETag): those sent stay good.
    validators = Validators(
        response.headers.get("ETag") or sent.etag, response.headers.get("Last-Modified") or sent.last_modified
    )
    logger.info("url_fetched host=%s not_modified=1", url.host)
    return FetchedFile(b"", None, None, str(url), validators, not_modified=True)


def _parse(url: str) -> URL:
    try:
        parsed = URL(url.strip())
    except (ValueError, TypeError) as exc:
        raise FetchError(f"not a valid URL ({reason(exc)}): check the link", reason="bad_url") from exc
    if parsed.scheme and parsed.scheme not in _SCHEMES:
        raise _bad_scheme(parsed.scheme)
    if not parsed.is_absolute() or not parsed.scheme:
        raise FetchError(f"{url!r} is not a full URL: give one starting with http:// or https://", reason="bad_url")
    return parsed


async def _check_hop(url: URL, *, policy: AddressPolicy, resolve: bool) -> URL:
    """The URL to request, once its scheme and address pass: a numeric host is checked and written canonically.

    A name is checked here only when asked to (a caller's session); otherwise the resolver checks it.
    """
    if url.scheme not in _SCHEMES:
        raise _bad_scheme(url.scheme)
    host = url.host
    if not host:
        raise FetchError(f"{_shown(url)} has no host name: check the link", reason="bad_url")
    if is_address_literal(host):
        # aiohttp connects to an address literal without asking the resolver, so it is checked here.
        check_address(host, policy)
        return url
    numeric = numeric_ipv4(host)
    if numeric is not None:
        check_address(numeric, policy, host=host)
        # aiohttp refuses the old numeric forms browsers accept (2130706433, 0x7f.1): send the usual one.
        return url.with_host(str(numeric))
    if resolve:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, url.port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise FetchError(
                f"could not resolve {host} ({reason(exc)}): check the link", reason="url_unresolved", host=host
            ) from exc
        for *_, address in infos:
            check_address(str(address[0]), policy, host=host, resolved=True)
    return url


def _next_hop(current: URL, response: aiohttp.ClientResponse) -> URL:
    location = response.headers.get("Location")
    if not location:
        raise FetchError(
            f"{_shown(current)} answered {_status(response)} without a Location: check the link",
            reason="url_status",
            status=response.status,
        )
    try:
        return current.join(URL(location))
    except (ValueError, TypeError) as exc:
        raise FetchError(
            f"{_shown(current)} redirected to an invalid URL ({reason(exc)}): check the link", reason="bad_url"
        ) from exc


async def _read_body(response: aiohttp.ClientResponse, url: URL, max_bytes: int) -> bytes:
    """The body, read in chunks and abandoned as soon as it passes `max_bytes`."""
    declared = response.content_length
    if declared is not None and declared > max_bytes:
        raise DocumentTooLarge(
            f"{_shown(url)} is {format_size(declared)}, over the limit of {format_size(max_bytes)}: "
            "upload a smaller file",
            reason="url_too_large",
            max_size=max_bytes,
        )
    body = bytearray()
    async for chunk in response.content.iter_chunked(_CHUNK):
        body += chunk
        if len(body) > max_bytes:
            raise DocumentTooLarge(
                f"{_shown(url)} sent more than the limit of {format_size(max_bytes)}: upload a smaller file",
                reason="url_too_large",
                max_size=max_bytes,
            )
    return bytes(body)


def _client_error(exc: aiohttp.ClientError, url: URL, limits: FetchLimits) -> FetchError:
    host = url.host or str(url)
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return FetchError(
            f"could not connect to {host} within {limits.connect_timeout:g}s: try again later",
            reason="url_unreachable",
            host=host,
        )
    if isinstance(exc, aiohttp.SocketTimeoutError):
        return FetchError(
            f"{host} sent nothing for {limits.read_idle_timeout:g}s: try again later", reason="url_timeout"
        )
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return FetchError(f"could not resolve {host}: check the link", reason="url_unresolved", host=host)
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return FetchError(
            f"{host} has an invalid TLS certificate ({reason(exc.certificate_error)}): fix the site",
            reason="url_tls",
            host=host,
        )
    if isinstance(exc, aiohttp.ClientConnectorError):
        return FetchError(
            f"could not connect to {host} ({reason(exc.os_error)}): check the link", reason="url_unreachable", host=host
        )
    return FetchError(f"fetching {_shown(url)} failed ({reason(exc)}): try again later", reason="url_failed")


def _bad_scheme(scheme: str) -> FetchError:
    return FetchError(f"cannot fetch {scheme} URLs: use an http or https link", reason="bad_scheme", scheme=scheme)


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


def without_credentials(url: str) -> str:
    """`url` as it may be stored and shown: no user name or password, no query parameter that carries a credential.

    The rest stays as written, so the same page keeps one identity however its link was signed.
    """
    parts = urlsplit(url.strip())
    fragment = _public_params(parts.fragment) if "=" in parts.fragment else parts.fragment
    return urlunsplit(
        (parts.scheme, parts.netloc.rpartition("@")[2], parts.path, _public_params(parts.query), fragment)
    )


def _public_params(query: str) -> str:
    pairs = (pair for pair in re.split(r"[&;]", query) if pair)
    return "&".join(pair for pair in pairs if not _CREDENTIAL_PARAM.search(unquote_plus(pair.partition("=")[0])))


def _shown_as_given(url: str) -> str:
    """The URL as the person wrote it (yarl rewrites an IPv6 host), without credentials, query or fragment."""
    parts = urlsplit(url.strip())
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


def _shown(url: URL) -> str:
    """The URL for a message: no credentials, no query string (either may hold a secret)."""
    try:
        return str(url.with_user(None).with_query(None).with_fragment(None))
    except ValueError:
        return url.host or "the URL"
