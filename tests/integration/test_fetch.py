"""fetch_url against a real aiohttp server on 127.0.0.1: names, statuses, redirects, size and time limits."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import quote

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web

from rag.errors import DocumentTooLarge, FetchError
from rag.ingest.addresses import AddressPolicy, AddressRefused
from rag.ingest.fetch import FetchLimits, fetch_url

LOOPBACK = AddressPolicy.allowing("127.0.0.0/8", "::1/128")
RULE = "private, loopback and link-local addresses are not fetched unless URL_FETCH_ALLOWED_NETWORKS lists them"

CHUNK = b"x" * 65536


@dataclass
class Site:
    """The test server: its base URL, the paths it was asked for, and an event that ends waiting handlers."""

    base: str
    requests: list[str] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)


def _app(site: Site) -> web.Application:
    @web.middleware
    async def record(request: web.Request, handler):
        site.requests.append(request.path_qs)
        return await handler(request)

    async def document(request: web.Request) -> web.Response:
        return web.Response(
            body=b"Opening hours: 9 to 5.",
            headers={
                "Content-Type": "text/plain; charset=utf-8",
                "Content-Disposition": 'attachment; filename="hours.txt"',
            },
        )

    async def encoded_name(request: web.Request) -> web.Response:
        disposition = "attachment; filename=\"fallback.pdf\"; filename*=UTF-8''%E6%8A%A5%E5%91%8A.pdf"
        return web.Response(body=b"%PDF-1.4", headers={"Content-Disposition": disposition})

    async def plain(request: web.Request) -> web.Response:
        return web.Response(body=b"# Guide", headers={"Content-Type": "text/markdown"})

    async def missing(request: web.Request) -> web.Response:
        return web.Response(status=404, text="no such page")

    async def slow(request: web.Request) -> web.Response:
        await site.release.wait()
        return web.Response(text="too late")

    async def idle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"the start, then silence")
        await site.release.wait()
        return response

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        try:
            while not site.release.is_set():
                await response.write(CHUNK)
        except ConnectionResetError:
            pass  # the client hung up, as it should
        return response

    async def declared_huge(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.content_length = 10**9
        await response.prepare(request)
        await response.write(CHUNK)
        await site.release.wait()
        return response

    async def redirect(request: web.Request) -> web.Response:
        hops = int(request.match_info["hops"])
        status = int(request.query.get("status", "302"))
        location = "/files/hours.txt" if hops == 1 else f"{hops - 1}?status={status}"
        return web.Response(status=status, headers={"Location": location})

    async def loop(request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": "/loop"})

    async def to_ftp(request: web.Request) -> web.Response:
        return web.Response(status=301, headers={"Location": "ftp://127.0.0.1/hours.txt"})

    async def no_location(request: web.Request) -> web.Response:
        return web.Response(status=302)

    async def to_private(request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": request.query["to"]})

    app = web.Application(middlewares=[record])
    app.router.add_get("/files/hours.txt", document)
    app.router.add_get("/report", encoded_name)
    app.router.add_get("/docs/résumé.md", plain)
    app.router.add_get("/docs/", plain)
    app.router.add_get("/missing", missing)
    app.router.add_get("/slow", slow)
    app.router.add_get("/idle", idle)
    app.router.add_get("/endless", endless)
    app.router.add_get("/huge", declared_huge)
    app.router.add_get("/redirect/{hops}", redirect)
    app.router.add_get("/loop", loop)
    app.router.add_get("/to-ftp", to_ftp)
    app.router.add_get("/no-location", no_location)
    app.router.add_get("/to-private", to_private)
    return app


@pytest_asyncio.fixture
async def site() -> AsyncIterator[Site]:
    """A server on 127.0.0.1 at a free port."""
    site = Site(base="")
    runner = web.AppRunner(_app(site))
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    site.base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield site
    finally:
        site.release.set()
        await runner.cleanup()


async def test_a_file_comes_with_its_disposition_name_and_bare_content_type(site):
    fetched = await fetch_url(f"{site.base}/files/hours.txt", policy=LOOPBACK)

    assert fetched.data == b"Opening hours: 9 to 5."
    assert fetched.filename == "hours.txt"
    assert fetched.content_type == "text/plain"
    assert fetched.final_url == f"{site.base}/files/hours.txt"


async def test_an_rfc_5987_file_name_wins_over_the_plain_one(site):
    assert (await fetch_url(f"{site.base}/report", policy=LOOPBACK)).filename == "报告.pdf"


async def test_without_a_disposition_the_name_is_the_last_path_segment_decoded(site):
    fetched = await fetch_url(f"{site.base}/docs/r%C3%A9sum%C3%A9.md", policy=LOOPBACK)
    assert (fetched.filename, fetched.content_type) == ("résumé.md", "text/markdown")


async def test_a_url_ending_in_a_slash_has_no_file_name(site):
    assert (await fetch_url(f"{site.base}/docs/", policy=LOOPBACK)).filename is None


async def test_a_404_is_reported_with_its_status_and_without_the_query(site):
    with pytest.raises(FetchError) as failure:
        await fetch_url(f"{site.base}/missing?token=secret", policy=LOOPBACK)
    assert str(failure.value) == f"{site.base}/missing answered 404 Not Found: check the link"


async def test_a_server_slower_than_the_total_limit_times_out(site):
    with pytest.raises(FetchError, match=r"/slow timed out after 0\.3s"):
        await fetch_url(f"{site.base}/slow", policy=LOOPBACK, limits=FetchLimits(total_timeout=0.3))


async def test_a_server_that_stops_sending_hits_the_idle_limit(site):
    with pytest.raises(FetchError, match=r"127\.0\.0\.1 sent nothing for 0\.2s"):
        await fetch_url(f"{site.base}/idle", policy=LOOPBACK, limits=FetchLimits(read_idle_timeout=0.2))


async def test_an_endless_body_is_abandoned_past_the_size_limit(site):
    with pytest.raises(DocumentTooLarge, match=r"/endless sent more than the limit of 1\.0 MB"):
        await fetch_url(f"{site.base}/endless", policy=LOOPBACK, limits=FetchLimits(max_bytes=1_000_000))


async def test_a_declared_length_over_the_limit_is_refused_before_the_body(site):
    with pytest.raises(DocumentTooLarge, match=r"/huge is 1000\.0 MB, over the limit of 1\.0 MB"):
        await fetch_url(f"{site.base}/huge", policy=LOOPBACK, limits=FetchLimits(max_bytes=1_000_000))


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_redirects_are_followed_to_the_final_url(site, status):
    fetched = await fetch_url(
        f"{site.base}/redirect/3?status={status}", policy=LOOPBACK, limits=FetchLimits(max_redirects=3)
    )

    assert fetched.final_url == f"{site.base}/files/hours.txt"
    assert fetched.filename == "hours.txt"
    assert site.requests == [
        f"/redirect/3?status={status}",
        f"/redirect/2?status={status}",
        f"/redirect/1?status={status}",
        "/files/hours.txt",
    ]


async def test_one_redirect_more_than_allowed_is_refused(site):
    with pytest.raises(FetchError, match=r"/redirect/3 redirected more than 2 times"):
        await fetch_url(f"{site.base}/redirect/3", policy=LOOPBACK, limits=FetchLimits(max_redirects=2))
    assert len(site.requests) == 3


async def test_a_redirect_loop_stops_at_the_limit(site):
    with pytest.raises(FetchError, match="redirected more than 5 times: link to the final address instead"):
        await fetch_url(f"{site.base}/loop", policy=LOOPBACK)
    assert site.requests == ["/loop"] * 6


async def test_a_redirect_to_another_scheme_is_refused(site):
    with pytest.raises(FetchError, match="cannot fetch ftp URLs: use an http or https link"):
        await fetch_url(f"{site.base}/to-ftp", policy=LOOPBACK)


# Where a redirect points, how the refusal shows that URL, and why it is refused. Nothing connects to them:
# the refusal comes before any request.
PRIVATE_REDIRECTS = [
    ("http://10.0.0.1/secrets", "http://10.0.0.1/secrets", "10.0.0.1 is a private address"),
    (
        "http://169.254.169.254/latest/meta-data/",
        "http://169.254.169.254/latest/meta-data/",
        "169.254.169.254 is a link-local address",
    ),
    ("http://[::ffff:192.168.1.1]/", "http://[::ffff:c0a8:101]/", "it points to 192.168.1.1, a private address"),
    ("http://167772165/admin", "http://167772165/admin", "it points to 10.0.0.5, a private address"),
    (
        "http://0xa9.0xfe.0xa9.0xfe/",
        "http://0xa9.0xfe.0xa9.0xfe/",
        "it points to 169.254.169.254, a link-local address",
    ),
    ("http://user:pw@10.0.0.5/x?key=secret", "http://10.0.0.5/x", "10.0.0.5 is a private address"),
]


@pytest.mark.parametrize(("target", "shown", "why"), PRIVATE_REDIRECTS)
async def test_a_redirect_to_a_private_address_is_refused_naming_both_ends_even_with_loopback_allowed(
    site, target, shown, why
):
    with pytest.raises(AddressRefused) as refusal:
        await fetch_url(f"{site.base}/to-private?to={quote(target)}", policy=LOOPBACK)
    assert str(refusal.value) == f"refused the redirect from {site.base}/to-private to {shown}: {why}; {RULE}"
    assert len(site.requests) == 1


async def test_a_redirect_without_a_location_is_reported(site):
    with pytest.raises(FetchError, match=r"/no-location answered 302 Found without a Location"):
        await fetch_url(f"{site.base}/no-location", policy=LOOPBACK)


async def test_a_loopback_address_is_refused_before_any_request(site):
    with pytest.raises(AddressRefused) as refusal:
        await fetch_url(f"{site.base}/files/hours.txt?token=secret")
    assert str(refusal.value) == f"refused {site.base}/files/hours.txt: 127.0.0.1 is a loopback address; {RULE}"
    assert site.requests == []


# URLs naming a non-public address in another form, and why each is refused. The refusal comes before
# connecting, so none of them is ever reached.
DISGUISED_ADDRESSES = [
    ("http://2130706433/", "it points to 127.0.0.1, a loopback address"),
    ("http://017700000001/", "it points to 127.0.0.1, a loopback address"),
    ("http://0x7f.1/", "it points to 127.0.0.1, a loopback address"),
    ("http://0x7f000001:8080/admin", "it points to 127.0.0.1, a loopback address"),
    ("http://127.1/", "it points to 127.0.0.1, a loopback address"),
    ("http://[::ffff:127.0.0.1]/", "it points to 127.0.0.1, a loopback address"),
    ("http://[::ffff:a9fe:a9fe]/latest", "it points to 169.254.169.254, a link-local address"),
    ("http://167772165/", "it points to 10.0.0.5, a private address"),
    ("http://0300.0250.0.1/", "it points to 192.168.0.1, a private address"),
    ("http://10.0.0.5/", "10.0.0.5 is a private address"),
    ("http://[::1]/", "::1 is a loopback address"),
]


@pytest.mark.parametrize(("url", "why"), DISGUISED_ADDRESSES)
async def test_a_non_public_address_in_any_form_is_refused_saying_what_and_why(url, why):
    with pytest.raises(AddressRefused) as refusal:
        await fetch_url(url)
    assert str(refusal.value) == f"refused {url}: {why}; {RULE}"


@pytest.mark.parametrize("host", ["1.2.3.256", "4294967296", "127.0.0.1.5", "0x7f.09"])
async def test_a_host_that_ends_in_a_number_but_is_no_address_is_refused(host):
    with pytest.raises(FetchError) as refusal:
        await fetch_url(f"http://{host}/")
    assert str(refusal.value) == f"{host} is not a valid IPv4 address: check the link"


async def test_a_numeric_form_of_an_allowed_address_is_fetched_at_its_usual_form(site):
    port = site.base.rsplit(":", 1)[1]
    fetched = await fetch_url(f"http://2130706433:{port}/files/hours.txt", policy=LOOPBACK)
    assert fetched.data == b"Opening hours: 9 to 5."
    assert fetched.final_url == f"{site.base}/files/hours.txt"


async def test_a_host_name_that_resolves_to_loopback_is_refused_at_connect(site):
    url = site.base.replace("127.0.0.1", "localhost") + "/files/hours.txt"
    with pytest.raises(AddressRefused) as refusal:
        await fetch_url(url)
    assert re.fullmatch(
        rf"refused {re.escape(url)}: localhost resolves to (127\.0\.0\.1|::1), a loopback address; {RULE}",
        str(refusal.value),
    )
    assert site.requests == []


async def test_a_callers_session_is_checked_by_resolving_first(site):
    url = site.base.replace("127.0.0.1", "localhost") + "/files/hours.txt"
    async with aiohttp.ClientSession() as session:
        with pytest.raises(
            AddressRefused, match=r"^refused http://localhost:\d+/files/hours\.txt: localhost resolves to"
        ):
            await fetch_url(url, session=session)
        fetched = await fetch_url(f"{site.base}/files/hours.txt", session=session, policy=LOOPBACK)
    assert fetched.data == b"Opening hours: 9 to 5."
    assert site.requests == ["/files/hours.txt"]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/file.txt", "cannot fetch ftp URLs"),
        ("file:///etc/passwd", "cannot fetch file URLs"),
        ("gopher://example.com/", "cannot fetch gopher URLs"),
        ("example.com/page", "is not a full URL"),
        ("/relative/path", "is not a full URL"),
        ("http://", "is not a full URL"),
    ],
)
async def test_urls_that_are_not_http_are_refused(url, message):
    with pytest.raises(FetchError, match=message):
        await fetch_url(url)


async def test_a_closed_port_is_reported_as_a_connection_failure():
    with pytest.raises(FetchError, match=r"could not connect to 127\.0\.0\.1"):
        await fetch_url("http://127.0.0.1:9/", policy=LOOPBACK)
