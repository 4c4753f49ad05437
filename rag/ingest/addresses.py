"""Which addresses URL fetching may connect to, how a host names one, and why one is refused."""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

from rag.errors import FetchError

ALLOWED_NETWORKS_SETTING = "URL_FETCH_ALLOWED_NETWORKS"
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# RFC 6052 well-known NAT64 prefix: the last 32 bits are an IPv4 address the gateway connects to.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# The WHATWG URL standard's IPv4 number forms: 0x-prefixed hex (digits optional), 0-prefixed octal, decimal.
_HEX = re.compile(r"0[xX][0-9a-fA-F]*")
_OCTAL = re.compile(r"0[0-7]+")
_DECIMAL = re.compile(r"0|[1-9][0-9]*")
_DIGITS = re.compile(r"[0-9]+")
_RULE = f"private, loopback and link-local addresses are not fetched unless {ALLOWED_NETWORKS_SETTING} lists them"


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
        ip = parse_address(address) if isinstance(address, str) else address
        if is_public_address(ip):
            return True
        return any(ip.version == network.version and ip in network for network in self.allowed_networks)


PUBLIC_ONLY = AddressPolicy()


class AddressRefused(FetchError):
    """Fetching may not connect to `address`, which the URL named as `host` (the address itself, a name, a number)."""

    def __init__(self, host: str, address: IPAddress, *, resolved: bool = False, refused: str | None = None) -> None:
        super().__init__(
            _refusal(host, address, resolved=resolved, refused=refused), reason="address_refused", host=host
        )
        self.host = host
        self.address = address
        self.resolved = resolved

    def refusing(self, refused: str) -> AddressRefused:
        """The same refusal, saying what was refused ("http://x/", "the redirect from A to B")."""
        return AddressRefused(self.host, self.address, resolved=self.resolved, refused=refused)


def parse_address(text: str) -> IPAddress:
    """The address in an IP literal, without an IPv6 zone ("fe80::1%eth0"); ValueError for anything else."""
    return ipaddress.ip_address(text.split("%", 1)[0])


def is_address_literal(host: str) -> bool:
    """Whether `host` is an IP address in its usual form (what aiohttp connects to without resolving)."""
    try:
        parse_address(host)
    except ValueError:
        return False
    return True


def is_public_address(address: str | IPAddress) -> bool:
    """Whether `address` is on the public internet: not private, loopback, link-local, multicast or reserved.

    IPv6 forms that carry an IPv4 address (mapped, 6to4, NAT64) are judged by that IPv4 address.
    """
    ip = _judged(ipaddress.ip_address(address) if isinstance(address, str) else address)
    refused = ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast
    return ip.is_global and not (refused or ip.is_reserved or ip.is_unspecified)


def check_address(
    address: str | IPAddress, policy: AddressPolicy = PUBLIC_ONLY, *, host: str | None = None, resolved: bool = False
) -> None:
    """Raise AddressRefused unless fetching from `address` is allowed; `host` is how the URL named it."""
    ip = parse_address(address) if isinstance(address, str) else address
    if not policy.allows(ip):
        raise AddressRefused(host or str(address), ip, resolved=resolved)


def numeric_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address a host in one of the old numeric forms stands for (2130706433, 0x7f.1, 0177.0.0.1).

    Parsed as the WHATWG URL standard's IPv4 parser does, which is what browsers and the C library's
    inet_aton accept. None for a name; FetchError for a host that ends in a number yet is no address.
    """
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if not (_HEX.fullmatch(parts[-1]) or _DIGITS.fullmatch(parts[-1])):
        return None
    try:
        numbers = [_ipv4_number(part) for part in parts]
    except ValueError:
        numbers = []
    # Every part but the last is one byte; the last fills the bytes left (so "127.1" is 127.0.0.1).
    fits = 0 < len(numbers) <= 4 and all(number <= 255 for number in numbers[:-1])
    if not fits or numbers[-1] >= 256 ** (5 - len(numbers)):
        raise FetchError(f"{host} is not a valid IPv4 address: check the link", reason="bad_url")
    value = numbers[-1] + sum(number * 256 ** (3 - index) for index, number in enumerate(numbers[:-1]))
    return ipaddress.IPv4Address(value)


def _ipv4_number(part: str) -> int:
    if _HEX.fullmatch(part):
        return int(part[2:] or "0", 16)
    if _OCTAL.fullmatch(part):
        return int(part, 8)
    if _DECIMAL.fullmatch(part):
        return int(part)
    raise ValueError(part)


def _judged(address: IPAddress) -> IPAddress:
    """The address the rule judges: the IPv4 address an IPv6 form carries (mapped, 6to4, NAT64), else itself."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return embedded
    return address


def _kind(address: IPAddress) -> str:
    """What kind of non-public address this is, with its article ("a loopback")."""
    kinds = (
        (address.is_unspecified, "an unspecified"),
        (address.is_loopback, "a loopback"),
        (address.is_link_local, "a link-local"),
        (address.is_multicast, "a multicast"),
        # Reserved before private: Python counts 240.0.0.0/4 and the broadcast address as private too.
        (address.is_reserved, "a reserved"),
        (address.is_private, "a private"),
    )
    return next((kind for matches, kind in kinds if matches), "a non-public")


def _refusal(host: str, address: IPAddress, *, resolved: bool, refused: str | None) -> str:
    judged = _judged(address)
    if resolved:
        why = f"{host} resolves to {judged}, {_kind(judged)} address"
    elif judged is address and host.split("%", 1)[0] == str(address):
        why = f"{host} is {_kind(judged)} address"
    else:
        why = f"{'it' if refused else host} points to {judged}, {_kind(judged)} address"
    return f"refused {refused}: {why}; {_RULE}" if refused else f"{why}; {_RULE}"


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
        """The addresses of `host` that fetching may connect to; AddressRefused naming one if none is."""
        results = await self._resolver.resolve(host, port, family)
        allowed = [result for result in results if self._policy.allows(result["host"])]
        if not allowed and results:
            check_address(results[0]["host"], self._policy, host=host, resolved=True)
        return allowed

    async def close(self) -> None:
        """Release the wrapped resolver."""
        await self._resolver.close()
