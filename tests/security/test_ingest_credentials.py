"""A URL's credentials (`user:password@`, `?token=`, a signed URL's signature) are used to fetch it and then
forgotten: no stored row, no /jobs line, no status message and no answer's source link carries them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from aiohttp import BasicAuth, web

from bot.knowledge.ingestion import stored_source
from storage.weaviate.collections import Collection
from tests.conftest import EmbeddedSettings
from tests.security.ingest_support import CHAT_A, World, running_world

PASSWORD = "pw-0f9e8d7c"
TOKEN = "tok-5a4b3c2d"
SIGNATURE = "sig-1a2b3c4d"
SECRETS = (PASSWORD, TOKEN, SIGNATURE)
PAGE = "# Falcon\n\nThe Falcon project codename is Kestrel."


@pytest_asyncio.fixture
async def site() -> AsyncIterator[str]:
    """A page on 127.0.0.1 that only the right credentials open; its base URL."""

    async def page(request: web.Request) -> web.Response:
        auth = BasicAuth.decode(request.headers.get("Authorization", ""))
        if (auth.password, request.query.get("token"), request.query.get("X-Amz-Signature")) != SECRETS:
            return web.Response(status=403)
        return web.Response(text=PAGE, content_type="text/markdown")

    app = web.Application()
    app.router.add_get("/falcon.md", page)
    runner = web.AppRunner(app)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    try:
        yield f"127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@pytest_asyncio.fixture
async def world(tmp_path: Path, embedded_settings: EmbeddedSettings) -> AsyncIterator[World]:
    async with running_world(tmp_path / "data", embedded_settings, URL_FETCH_ALLOWED_NETWORKS="127.0.0.0/8") as running:
        yield running


def _no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


async def test_credentials_in_an_ingested_url_are_used_to_fetch_it_and_stored_nowhere(
    world: World, site: str, tmp_path: Path
) -> None:
    url = f"http://reader:{PASSWORD}@{site}/falcon.md?token={TOKEN}&lang=en&X-Amz-Signature={SIGNATURE}"
    target = await world.command(f"/ingest {url}")  # the status message: queued, then each edit
    (job,) = await world.jobs()
    assert job.status == "succeeded", job.error  # fetched with the credentials as given
    assert job.source == f"http://{site}/falcon.md?lang=en"
    (document,) = await world.services.documents.in_kb(world.alpha.id)
    assert document.source_uri == job.source
    _no_secret(target)
    _no_secret(await world.command("/jobs"))

    answer = await world.ask("What is the Falcon codename?", CHAT_A)
    assert "Kestrel" in answer.replies()[0]
    result_sources = answer.streams[0].finished.sources if answer.streams[0].finished else ()
    assert [source.url for source in result_sources] == [job.source]
    _no_secret(" ".join(answer.replies()))
    _no_secret(await world.command("/sources", CHAT_A))

    hits = await world.services.store.search_bm25(Collection.CHUNKS, [world.alpha.id], "falcon kestrel", 10)
    assert hits
    _no_secret(repr(hits))
    stored = b"".join(path.read_bytes() for path in (tmp_path / "data").glob("ragbot.sqlite3*"))
    for secret in SECRETS:
        assert secret.encode() not in stored


def test_every_common_form_of_a_url_credential_is_left_out_of_what_is_stored() -> None:
    cases = {
        "https://user:pass@host.example/a.pdf": "https://host.example/a.pdf",
        "https://host.example/a?access_token=x&page=2": "https://host.example/a?page=2",
        "https://host.example/a?api_key=x&apikey=y&key=z&private_token=w": "https://host.example/a",
        "https://b.s3.amazonaws.com/f.pdf?X-Amz-Credential=c&X-Amz-Signature=s&X-Amz-Security-Token=t&X-Amz-Date=d": (
            "https://b.s3.amazonaws.com/f.pdf?X-Amz-Date=d"
        ),
        "https://acct.blob.core.windows.net/c/f.pdf?sv=1&sig=s&se=2": "https://acct.blob.core.windows.net/c/f.pdf?sv=1&se=2",
        "https://host.example/a?password=p&client_secret=c&auth=a#access_token=t&state=1": "https://host.example/a#state=1",
    }
    assert {url: stored_source("url", url) for url in cases} == cases
    assert stored_source("upload", "/data/uploads/x/a?token=1.md") == "/data/uploads/x/a?token=1.md"
