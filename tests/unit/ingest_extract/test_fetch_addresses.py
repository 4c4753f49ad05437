"""The address rule for URL fetching: public internet only, unless private networks are allowed."""

from __future__ import annotations

import socket

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from rag.errors import FetchError
from rag.ingest.fetch import AddressPolicy, PublicAddressResolver, check_address, is_public_address

REFUSED = [
    "127.0.0.1",
    "127.9.9.9",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
    "240.0.0.1",
    "192.0.2.1",
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "ff02::1",
    "2001:db8::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "2002:7f00:1::",
    "64:ff9b::a9fe:a9fe",
]
ALLOWED = [
    "93.184.216.34",
    "8.8.8.8",
    "2606:2800:220:1::1",
    "2001:4860:4860::8888",
    "::ffff:93.184.216.34",
    "2002:5db8:d822::",
    "64:ff9b::808:808",
]


@pytest.mark.parametrize("address", REFUSED)
def test_non_public_addresses_are_refused(address):
    assert not is_public_address(address)
    with pytest.raises(FetchError) as refusal:
        check_address(address)
    assert str(refusal.value) == (
        f"{address} is not a public address: add its network to URL_FETCH_ALLOWED_NETWORKS "
        "to fetch from a private network"
    )


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_are_allowed(address):
    assert is_public_address(address)
    check_address(address)


@pytest.mark.parametrize("address", REFUSED)
def test_allowing_private_networks_allows_every_address(address):
    check_address(address, AddressPolicy.allowing("0.0.0.0/0", "::/0"))


def test_a_link_local_address_with_a_scope_is_refused():
    with pytest.raises(FetchError, match="fe80::1%eth0 is not a public address"):
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
    with pytest.raises(FetchError, match=r"169\.254\.169\.254 is not a public address"):
        await resolver.resolve("metadata.example", 80)


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
