"""Admin-token guessing and the cookies that prove a login: lock-out, short tokens, expiry, revocation, fixation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio

from adapters.web.session import ADMIN_COOKIE, SESSION_COOKIE
from bot.app.preflight import check_platforms
from bot.app.settings import Settings
from bot.errors import StartupError
from bot.settings_base import networks
from tests.conftest import EmbeddedSettings
from tests.security.web_support import ACCESS_TOKEN, ADMIN_TOKEN, Served, cookie, login, plant, serve, settings_in
from tests.security.web_support import opened as opened_page


@pytest_asyncio.fixture(scope="module")
async def served(
    tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings
) -> AsyncIterator[Served]:
    # Public behind a trusted proxy (the test client, on loopback), so each test can be its own client address.
    settings = settings_in(embedded_settings, tmp_path_factory.mktemp("admin"), WEB_ACCESS_TOKEN=ACCESS_TOKEN)
    async with serve(settings, public=True, trusted_proxies=networks("127.0.0.1")) as served:
        await served.services.knowledge.create("docs", {})
        yield served


async def opened(browser: aiohttp.ClientSession) -> aiohttp.ClientSession:
    return await opened_page(browser, ACCESS_TOKEN)


def _client(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": address}


async def _is_admin(browser: aiohttp.ClientSession) -> bool:
    async with browser.get("/api/session") as response:
        return bool((await response.json())["admin"])


async def test_guessing_the_admin_token_is_locked_out_after_five_wrong_tries(served: Served) -> None:
    async with served.browser(**_client("203.0.113.5")) as guesser:
        await opened(guesser)
        for attempt in range(5):
            assert (await login(guesser, f"guess-{attempt}"))[0] == 403
        status, body = await login(guesser)
        assert status == 429, "even the right token is refused while locked out"
        assert "Try again in 15 minutes" in body["error"]
        assert not await _is_admin(guesser)
    # A new session from the same address is locked out too: sessions are free, addresses are not.
    async with served.browser(**_client("203.0.113.5")) as again:
        await opened(again)
        assert (await login(again))[0] == 429
    # Another address is not.
    async with served.browser(**_client("203.0.113.6")) as someone_else:
        await opened(someone_else)
        assert (await login(someone_else))[0] == 200


async def test_guessing_access_links_is_locked_out_like_admin_tokens(served: Served) -> None:
    async with served.browser(**_client("203.0.113.7")) as guesser:
        for attempt in range(5):
            async with guesser.get(f"/?access=guess-{attempt}") as response:
                assert response.status == 403
        async with guesser.get(f"/?access={ACCESS_TOKEN}") as response:
            assert response.status == 403, "the right link is refused too while the address is locked out"


@pytest.mark.parametrize("variable", ["WEB_ADMIN_TOKEN", "WEB_ACCESS_TOKEN"])
def test_a_short_token_stops_start_up_naming_its_variable(tmp_path: Path, variable: str) -> None:
    with pytest.raises(StartupError) as caught:
        check_platforms(Settings(_env_file=None, RAGBOT_DATA_DIR=tmp_path, **{variable: "let-me-in"}), serving=True)
    assert caught.value.setting == variable
    assert "32" in caught.value.problem


async def test_an_admin_login_rotates_the_session_id_so_a_planted_session_gains_nothing(served: Served) -> None:
    async with served.browser(**_client("203.0.113.8")) as victim:
        await opened(victim)
        planted = cookie(victim, SESSION_COOKIE)  # what an attacker who set or saw the cookie knows
        assert (await login(victim))[0] == 200
        assert cookie(victim, SESSION_COOKIE) != planted
        proof, rotated = cookie(victim, ADMIN_COOKIE), cookie(victim, SESSION_COOKIE)
    assert planted is not None
    assert proof is not None
    assert rotated is not None
    # The attacker's browser with the planted session id and even the admin proof copied: not an admin.
    async with served.browser(**_client("203.0.113.9")) as attacker:
        await opened(attacker)
        plant(attacker, {SESSION_COOKIE: planted, ADMIN_COOKIE: proof})
        assert not await _is_admin(attacker)
        plant(attacker, {SESSION_COOKIE: rotated})
        assert await _is_admin(attacker), "the proof works with the session it was issued to (the drill is sound)"


async def test_a_copied_admin_cookie_is_refused_after_logout(served: Served) -> None:
    async with served.browser(**_client("203.0.113.10")) as admin, served.browser(**_client("203.0.113.11")) as thief:
        await opened(admin)
        assert (await login(admin))[0] == 200
        await opened(thief)
        plant(
            thief,
            {SESSION_COOKIE: cookie(admin, SESSION_COOKIE) or "", ADMIN_COOKIE: cookie(admin, ADMIN_COOKIE) or ""},
        )
        assert await _is_admin(thief)
        async with admin.post("/api/admin/logout", json={}) as response:
            assert response.status == 200
        assert not await _is_admin(thief), "logout revoked the proof on the server, not only in the browser"


async def test_a_copied_admin_cookie_logged_out_is_refused_by_every_instance_and_after_a_restart(
    tmp_path: Path, embedded_settings: EmbeddedSettings
) -> None:
    settings = settings_in(embedded_settings, tmp_path, WEB_ACCESS_TOKEN=ACCESS_TOKEN)
    proxied = networks("127.0.0.1")
    async with (
        serve(settings, public=True, trusted_proxies=proxied) as first,
        first.browser(**_client("203.0.113.20")) as admin,
    ):
        await opened(admin)
        assert (await login(admin))[0] == 200
        copied = {SESSION_COOKIE: cookie(admin, SESSION_COOKIE) or "", ADMIN_COOKIE: cookie(admin, ADMIN_COOKIE) or ""}
        async with admin.post("/api/admin/logout", json={}) as response:
            assert response.status == 200
    # Another instance on the same database (here: the same one started again, its memory empty).
    async with (
        serve(settings, public=True, trusted_proxies=proxied) as other,
        other.browser(**_client("203.0.113.21")) as thief,
    ):
        await opened(thief)
        plant(thief, copied)
        assert not await _is_admin(thief), "the logout was kept in one process's memory only"
        async with other.browser(**_client("203.0.113.22")) as admin:
            await opened(admin)
            assert (await login(admin))[0] == 200
            assert await _is_admin(admin), "a new login works (the drill is sound)"


async def test_an_admin_proof_expires_on_the_server_after_twelve_hours(served: Served) -> None:
    async with served.browser(**_client("203.0.113.12")) as admin:
        await opened(admin)
        assert (await login(admin))[0] == 200
        kept = {SESSION_COOKIE: cookie(admin, SESSION_COOKIE) or "", ADMIN_COOKIE: cookie(admin, ADMIN_COOKIE) or ""}
    async with served.browser(**_client("203.0.113.13")) as later:
        await opened(later)
        plant(later, kept)
        assert await _is_admin(later)
        served.clock.now += 12 * 3600 + 1
        try:
            plant(later, kept)  # a browser ignoring Max-Age keeps sending it
            assert not await _is_admin(later)
        finally:
            served.clock.now -= 12 * 3600 + 1


async def test_a_session_cookie_older_than_its_age_is_refused(served: Served) -> None:
    async with served.browser(**_client("203.0.113.14")) as browser:
        await opened(browser)
        old = cookie(browser, SESSION_COOKIE) or ""
        served.clock.now += 400 * 24 * 3600 + 1
        try:
            plant(browser, {SESSION_COOKIE: old})
            async with browser.post("/api/new", json={}) as response:
                assert response.status == 403
        finally:
            served.clock.now -= 400 * 24 * 3600 + 1


@pytest.mark.parametrize(("proto", "secure"), [("https", True), ("http", False)])
async def test_cookies_are_secure_behind_a_trusted_tls_proxy(served: Served, proto: str, secure: bool) -> None:
    async with served.browser(**_client("203.0.113.15"), **{"X-Forwarded-Proto": proto}) as browser:
        origin = f"{proto}://127.0.0.1:{served.port}"
        browser.headers["Origin"] = origin
        async with browser.get(f"/?access={ACCESS_TOKEN}", allow_redirects=False) as page:
            assert page.status == 302
            for name in (SESSION_COOKIE, "ragbot_access"):
                assert bool(page.cookies[name]["secure"]) is secure
                assert page.cookies[name]["samesite"] == "Strict"
            # The client keeps Secure cookies off plain http (the proxy's leg): hand them over as a browser would.
            plant(browser, {name: morsel.value for name, morsel in page.cookies.items()})
        async with browser.post("/api/admin/login", json={"token": ADMIN_TOKEN}) as response:
            assert response.status == 200, await response.text()
            assert bool(response.cookies[ADMIN_COOKIE]["secure"]) is secure
            assert response.cookies[ADMIN_COOKIE]["max-age"] == str(12 * 3600)
