"""Browser sessions of the web chat: signed cookies for the session, admin rights and the access token.

Each proof carries the time it was issued and is refused past its age (the session's and the access link's
as long as a browser keeps a cookie, an admin's 12 hours); an admin's proof is bound to one session id and can
be revoked before then (log out). Revocations are kept in the database (SharedRevocations) until the proof would
have expired anyway, so every instance refuses a logged-out proof, before and after a restart.

The signing key is kept in the database, so every instance behind a load balancer checks the cookies any of
them issued. Keeping it there exposes nothing a reader of the database lacks: it holds every session's id and
conversation already, and the admin and access proofs also sign the tokens' digests, which it does not hold.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from storage.db import Database
from storage.repos.leases import LeaseRepo
from storage.repos.shared_keys import shared_key

SESSION_COOKIE: Final = "ragbot_session"
ADMIN_COOKIE: Final = "ragbot_admin"
ACCESS_COOKIE: Final = "ragbot_access"
SESSION_AGE: Final = 400 * 24 * 3600  # browsers cap cookie lifetimes at 400 days
ADMIN_AGE: Final = 12 * 3600  # a working day: an admin proof left in a shared browser does not outlive it
_CLOCK_SKEW: Final = 60  # a proof issued "in the future" by this much is still the clock's, not a forgery's
_KEY_NAME: Final = "web-session"
_LEGACY_KEY_FILE: Final = "web-session.key"  # where the key was kept before it was shared


async def load_key(db: Database, data_dir: Path) -> bytes:
    """The signing key every instance on `db` shares: made once, by the first instance that needs it.

    A key file an older ragbot kept in the data dir becomes the shared key, so its browsers keep their sessions.
    """
    return await shared_key(db, _KEY_NAME, _legacy_key(data_dir) or secrets.token_bytes(32))


def _legacy_key(data_dir: Path) -> bytes | None:
    path = data_dir / _LEGACY_KEY_FILE
    key = path.read_bytes() if path.is_file() else b""
    return key if len(key) >= 32 else None


def _token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class SessionSigner:
    """Issues and checks the cookies; a cookie that does not verify, is too old or revoked is treated as absent."""

    def __init__(self, key: bytes, clock: Callable[[], float] = time.time) -> None:
        self._key = key
        self._clock = clock
        self._revoked: dict[str, float] = {}  # admin proof -> when it expires anyway

    def _sign(self, *parts: str) -> str:
        return hmac.new(self._key, "\x1f".join(parts).encode(), hashlib.sha256).hexdigest()[:32]

    def _now(self) -> str:
        return str(int(self._clock()))

    def _fresh(self, issued: str, age: int) -> bool:
        if not issued.isdigit():
            return False
        now = self._clock()
        return now - age < int(issued) <= now + _CLOCK_SKEW

    def new_session(self) -> str:
        """A fresh session cookie value: a random id, when it was issued, and their signature."""
        session_id, issued = secrets.token_urlsafe(18), self._now()
        return f"{session_id}.{issued}.{self._sign('session', session_id, issued)}"

    def session_id(self, cookie: str | None) -> str | None:
        """The session id of a valid cookie, else None (stale, forged or malformed)."""
        parts = (cookie or "").split(".")
        if len(parts) != 3:
            return None
        session_id, issued, signature = parts
        if not session_id or not _same(signature, self._sign("session", session_id, issued)):
            return None
        return session_id if self._fresh(issued, SESSION_AGE) else None

    def admin_cookie(self, session_id: str, admin_token: str) -> str:
        """Proof that this session entered the admin token (invalid once the token changes or 12 hours passed)."""
        issued = self._now()
        return f"{issued}.{self._sign('admin', session_id, issued, _token_digest(admin_token))}"

    def is_admin(self, session_id: str, cookie: str | None, admin_token: str | None) -> bool:
        """Whether the admin cookie proves the current admin token for this session, and is neither old nor revoked."""
        parts = (cookie or "").split(".")
        if not admin_token or len(parts) != 2 or cookie in self._revoked:
            return False
        issued, signature = parts
        expected = self._sign("admin", session_id, issued, _token_digest(admin_token))
        return _same(signature, expected) and self._fresh(issued, ADMIN_AGE)

    def revoke(self, cookie: str) -> None:
        """Refuse this admin proof from now on (log out)."""
        now = self._clock()
        self._revoked = {proof: until for proof, until in self._revoked.items() if until > now}
        self._revoked[cookie] = now + ADMIN_AGE + _CLOCK_SKEW

    def access_cookie(self, access_token: str) -> str:
        """Proof that this browser opened the access link (invalid once the token changes)."""
        issued = self._now()
        return f"{issued}.{self._sign('access', issued, _token_digest(access_token))}"

    def has_access(self, cookie: str | None, access_token: str | None) -> bool:
        """True without an access token; with one, whether the cookie proves it and is not too old."""
        if not access_token:
            return True
        parts = (cookie or "").split(".")
        if len(parts) != 2:
            return False
        issued, signature = parts
        expected = self._sign("access", issued, _token_digest(access_token))
        return _same(signature, expected) and self._fresh(issued, SESSION_AGE)


def _same(given: str, expected: str) -> bool:
    # Bytes: compare_digest raises on str with non-ASCII characters, which a forged cookie may hold.
    return hmac.compare_digest(given.encode(), expected.encode())


def token_matches(given: str, expected: str) -> bool:
    """Constant-time comparison of a token someone typed with the configured one."""
    return _same(given, expected)


class SharedRevocations:
    """Admin proofs logged out on any instance, kept in the database (as leases by its clock) until they would
    have expired anyway: a proof copied before its logout is refused by every instance, and after a restart."""

    def __init__(self, leases: LeaseRepo) -> None:
        self._leases = leases

    async def revoke(self, proof: str) -> None:
        """Refuse `proof` everywhere from now on."""
        await self._leases.acquire(_revoked_name(proof), "web-logout", lease=ADMIN_AGE + _CLOCK_SKEW)

    async def revoked(self, proof: str) -> bool:
        """Whether `proof` was logged out on some instance."""
        return await self._leases.holder(_revoked_name(proof)) is not None


def _revoked_name(proof: str) -> str:
    return "revoked-admin:" + hashlib.sha256(proof.encode()).hexdigest()[:48]
