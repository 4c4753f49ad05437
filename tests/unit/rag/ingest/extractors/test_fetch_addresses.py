"""The address rule for URL fetching: public internet only, unless private networks are allowed."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from rag.errors import FetchError
from rag.ingest.addresses import (
    AddressPolicy,
    AddressRefused,
    PublicAddressResolver,
    check_address,
    is_public_address,
    numeric_ipv4,
)

RULE = "private, loopback and link-local addresses are not fetched unless URL_FETCH_ALLOWED_NETWORKS lists them"
# Each refused address with why it is refused, as the message says it.
REFUSED_BECAUSE = [
    ("127.0.0.1", "127.0.0.1 is a loopback address"),
    ("127.9.9.9", "127.9.9.9 is a loopback address"),
    ("10.1.2.3", "10.1.2.3 is a private address"),
    ("172.16.0.1", "172.16.0.1 is a private address"),
    ("192.168.1.1", "192.168.1.1 is a private address"),
    ("169.254.169.254", "169.254.169.254 is a link-local address"),
    ("100.64.0.1", "100.64.0.1 is a non-public address"),
    ("0.0.0.0", "0.0.0.0 is an unspecified address"),
    ("224.0.0.1", "224.0.0.1 is a multicast address"),
    ("255.255.255.255", "255.255.255.255 is a reserved address"),
    ("240.0.0.1", "240.0.0.1 is a reserved address"),
    ("192.0.2.1", "192.0.2.1 is a private address"),
    ("::1", "::1 is a loopback address"),
    ("::", ":: is an unspecified address"),
    ("fe80::1", "fe80::1 is a link-local address"),
    ("fc00::1", "fc00::1 is a private address"),
    ("ff02::1", "ff02::1 is a multicast address"),
    ("2001:db8::1", "2001:db8::1 is a private address"),
    ("::ffff:127.0.0.1", "::ffff:127.0.0.1 points to 127.0.0.1, a loopback address"),
    ("::ffff:10.0.0.1", "::ffff:10.0.0.1 points to 10.0.0.1, a private address"),
    ("::ffff:169.254.169.254", "::ffff:169.254.169.254 points to 169.254.169.254, a link-local address"),
    ("2002:7f00:1::", "2002:7f00:1:: points to 127.0.0.1, a loopback address"),
    ("64:ff9b::a9fe:a9fe", "64:ff9b::a9fe:a9fe points to 169.254.169.254, a link-local address"),
]
REFUSED = [address for address, _ in REFUSED_BECAUSE]
ALLOWED = [
    "93.184.216.34",
    "8.8.8.8",
    "2606:2800:220:1::1",
    "2001:4860:4860::8888",
    "::ffff:93.184.216.34",
    "2002:5db8:d822::",
    "64:ff9b::808:808",
]


@pytest.mark.parametrize(("address", "why"), REFUSED_BECAUSE)
def test_non_public_addresses_are_refused_saying_what_kind_they_are(address, why):
    assert not is_public_address(address)
    with pytest.raises(AddressRefused) as refusal:
        check_address(address)
    assert str(refusal.value) == f"{why}; {RULE}"


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_are_allowed(address):
    assert is_public_address(address)
    check_address(address)


@pytest.mark.parametrize("address", REFUSED)
def test_allowing_private_networks_allows_every_address(address):
    check_address(address, AddressPolicy.allowing("0.0.0.0/0", "::/0"))


def test_a_link_local_address_with_a_scope_is_refused():
    with pytest.raises(FetchError, match=r"^fe80::1%eth0 is a link-local address; "):
        check_address("fe80::1%eth0")


class _FixedResolver(AbstractResolver):
    """Answers every lookup with the same addresses, as a DNS server under someone else's control might."""

    def __init__(self, *addresses: str) -> None:
        self.addresses = addresses
        self.closed = False

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(hostname=host, host=address, port=port, family=family, proto=0, flags=0)
            for address in self.addresses
        ]

    async def close(self) -> None:
        self.closed = True


async def test_the_resolver_hands_out_only_public_addresses():
    resolver = PublicAddressResolver(resolver=_FixedResolver("10.0.0.7", "93.184.216.34"))
    results = await resolver.resolve("mixed.example", 443)
    assert [result["host"] for result in results] == ["93.184.216.34"]


async def test_the_resolver_refuses_a_name_that_points_only_inside():
    resolver = PublicAddressResolver(resolver=_FixedResolver("169.254.169.254"))
    with pytest.raises(AddressRefused) as refusal:
        await resolver.resolve("metadata.example", 80)
    assert str(refusal.value) == f"metadata.example resolves to 169.254.169.254, a link-local address; {RULE}"


async def test_the_resolver_passes_everything_when_private_networks_are_allowed():
    resolver = PublicAddressResolver(policy=AddressPolicy.allowing("10.0.0.0/8"), resolver=_FixedResolver("10.0.0.7"))
    assert [result["host"] for result in await resolver.resolve("intranet.example", 80)] == ["10.0.0.7"]


async def test_closing_the_resolver_closes_the_one_it_wraps():
    inner = _FixedResolver("93.184.216.34")
    await PublicAddressResolver(resolver=inner).close()
    assert inner.closed


def test_an_allowed_network_admits_only_its_own_addresses() -> None:
    policy = AddressPolicy.allowing("127.0.0.0/8")
    check_address("127.0.0.1", policy)
    for address in ("10.0.0.1", "169.254.169.254", "::1", "192.168.1.5"):
        with pytest.raises(FetchError, match="URL_FETCH_ALLOWED_NETWORKS"):
            check_address(address, policy)


def test_a_bad_network_in_the_policy_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"10\.0\.0\.0/33"):
        AddressPolicy.allowing("10.0.0.0/33")


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7F.0.0.0x1", "127.0.0.1"),
        ("10.0.0.5.", "10.0.0.5"),
        ("0x", "0.0.0.0"),
        ("167772165", "10.0.0.5"),
        ("1572395042", "93.184.216.34"),
    ],
)
def test_old_numeric_forms_stand_for_the_ipv4_address_a_browser_would_reach(host, address):
    assert str(numeric_ipv4(host)) == address


@pytest.mark.parametrize("host", ["example.com", "localhost", "1.example", "0x7g.example", "xn--80ak6aa92e.com"])
def test_names_are_not_numeric_addresses(host):
    assert numeric_ipv4(host) is None


@pytest.mark.parametrize(
    "host", ["1.2.3.256", "4294967296", "256.1", "1.2.3.4.5", "08", "0x7f.09", "example.123", "1..2"]
)
def test_a_host_that_ends_in_a_number_but_is_no_address_is_refused(host):
    with pytest.raises(FetchError) as refusal:
        numeric_ipv4(host)
    assert str(refusal.value) == f"{host} is not a valid IPv4 address: check the link"


def test_a_numeric_form_is_refused_naming_the_address_it_stands_for():
    with pytest.raises(AddressRefused) as refusal:
        check_address(ipaddress.IPv4Address("127.0.0.1"), host="2130706433")
    assert str(refusal.value) == f"2130706433 points to 127.0.0.1, a loopback address; {RULE}"
    assert str(refusal.value.refusing("http://2130706433/")) == (
        f"refused http://2130706433/: it points to 127.0.0.1, a loopback address; {RULE}"
    )
