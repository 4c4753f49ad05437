"""SSRF drills: URL ingestion reaches only the public internet unless URL_FETCH_ALLOWED_NETWORKS says otherwise.

rag.ingest.fetch checks every hop's scheme and address (address literals and the old numeric forms before
connecting, names in the resolver that hands aiohttp its addresses, so DNS rebinding cannot slip past the check);
rag.ingest.addresses judges an address, IPv6 forms that carry an IPv4 address by that address.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from aiohttp import web

from rag.errors import FetchError
from rag.ingest.addresses import AddressPolicy, AddressRefused
from rag.ingest.fetch import fetch_url

# Only the drill's own server: what it redirects to must still be refused.
ITS_OWN_ADDRESS = AddressPolicy.allowing("127.0.0.1/32")


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://127.1.2.3:8080/admin",
        "http://2130706433/",  # 127.0.0.1 as one number
        "http://0x7f.1/",  # and in hex
        "http://0177.0.0.1/",  # and in octal
        "http://0.0.0.0/",
        "http://10.0.0.1/",
        "http://172.16.5.4/",
        "http://192.168.1.1/router",
        "http://100.64.0.1/",  # carrier-grade NAT
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata
        "http://[::1]/",
        "http://[::]/",
        "http://[fd00::1]/",  # unique local
        "http://[fe80::1]/",  # link-local
        "http://[::ffff:127.0.0.1]/",  # IPv4-mapped loopback
        "http://[::ffff:169.254.169.254]/",
        "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 of 169.254.169.254
        "http://[2002:7f00:1::]/",  # 6to4 of 127.0.0.1
        "http://localhost/",  # a name that resolves to loopback
        "http://localhost:8080/admin",
    ],
)
async def test_a_url_to_a_loopback_private_or_link_local_address_is_refused(url: str) -> None:
    with pytest.raises(AddressRefused):
        await fetch_url(url)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "bad_scheme"),
        ("gopher://127.0.0.1:6379/_INFO", "bad_scheme"),
        ("ftp://example.org/file.pdf", "bad_scheme"),
        ("dict://127.0.0.1:11211/stats", "bad_scheme"),
        ("data:text/plain,hello", "bad_scheme"),
        ("//127.0.0.1/", "bad_url"),
    ],
)
async def test_a_url_that_is_not_http_is_refused(url: str, reason: str) -> None:
    with pytest.raises(FetchError) as caught:
        await fetch_url(url)
    assert caught.value.reason == reason


@pytest_asyncio.fixture
async def redirector() -> AsyncIterator[str]:
    """A server on 127.0.0.1 that redirects /to?where=URL to URL; its base URL."""

    async def to(request: web.Request) -> web.Response:
        raise web.HTTPFound(request.query["where"])

    app = web.Application()
    app.router.add_get("/to", to)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(
    ("where", "reason"),
    [
        ("http://169.254.169.254/latest/meta-data/", "address_refused"),
        ("http://10.0.0.1/internal", "address_refused"),
        ("http://[::1]/", "address_refused"),
        ("http://[fd00::1]/", "address_refused"),
        ("http://[::ffff:10.0.0.1]/", "address_refused"),
        ("http://2130706434/", "address_refused"),
        ("file:///etc/passwd", "bad_scheme"),
        ("gopher://127.0.0.1:6379/_INFO", "bad_scheme"),
    ],
)
async def test_a_redirect_to_a_private_address_or_another_scheme_is_refused(
    redirector: str, where: str, reason: str
) -> None:
    with pytest.raises(FetchError) as caught:
        await fetch_url(f"{redirector}/to?where={where}", policy=ITS_OWN_ADDRESS)
    assert caught.value.reason == reason
