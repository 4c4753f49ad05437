"""Browser sessions of the web chat: signed cookies for the session, admin rights and the access token."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path
from typing import Final

SESSION_COOKIE: Final = "ragbot_session"
ADMIN_COOKIE: Final = "ragbot_admin"
ACCESS_COOKIE: Final = "ragbot_access"
_KEY_FILE: Final = "web-session.key"


def load_key(data_dir: Path) -> bytes:
    """The signing key kept in the data dir (made on first use, readable by its owner only)."""
    path = data_dir / _KEY_FILE
    if path.is_file():
        key = path.read_bytes()
        if len(key) >= 32:
            return key
    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as file:
        file.write(key)
    return key


def _token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class SessionSigner:
    """Issues and checks the cookies; a cookie that does not verify is treated as absent, never trusted."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def _sign(self, *parts: str) -> str:
        return hmac.new(self._key, "\x1f".join(parts).encode(), hashlib.sha256).hexdigest()[:32]

    def new_session(self) -> str:
        """A fresh session cookie value: a random id and its signature."""
        session_id = secrets.token_urlsafe(18)
        return f"{session_id}.{self._sign('session', session_id)}"

    def session_id(self, cookie: str | None) -> str | None:
        """The session id of a valid cookie, else None (stale, forged or malformed)."""
        if not cookie or cookie.count(".") != 1:
            return None
        session_id, signature = cookie.split(".")
        if not session_id or not hmac.compare_digest(signature, self._sign("session", session_id)):
            return None
        return session_id

    def admin_cookie(self, session_id: str, admin_token: str) -> str:
        """Proof that this session entered the admin token (invalid once the token changes)."""
        return self._sign("admin", session_id, _token_digest(admin_token))

    def is_admin(self, session_id: str, cookie: str | None, admin_token: str | None) -> bool:
        """Whether the admin cookie proves the current admin token for this session."""
        if not cookie or not admin_token:
            return False
        return hmac.compare_digest(cookie, self.admin_cookie(session_id, admin_token))

    def access_cookie(self, access_token: str) -> str:
        """Proof that this browser opened the access link (invalid once the token changes)."""
        return self._sign("access", _token_digest(access_token))

    def has_access(self, cookie: str | None, access_token: str | None) -> bool:
        """True without an access token; with one, whether the cookie proves it."""
        if not access_token:
            return True
        return bool(cookie) and hmac.compare_digest(cookie or "", self.access_cookie(access_token))


def token_matches(given: str, expected: str) -> bool:
    """Constant-time comparison of a token someone typed with the configured one."""
    return hmac.compare_digest(given.encode(), expected.encode())
