"""Cross-site request refusal for the web chat's state-changing routes.

SameSite=Strict keeps the cookies off cross-site requests, but another origin of the same site (another localhost
port, a sibling subdomain) is same-site: its `text/plain` form posts go with them. So every state-changing request
must be one no other origin can send without a CORS preflight, which ragbot never answers: JSON (an upload, being
multipart, carries a custom header instead), and from an Origin (else a Referer) equal to ragbot's own.
"""

from __future__ import annotations

from typing import Final

from aiohttp import web
from yarl import URL

from bot.words import messages

UPLOAD_PATH: Final = "/api/upload"
# A question with a pasted image or a recording: multipart like an upload, so it carries the same custom header.
MEDIA_PATH: Final = "/api/media"
REQUEST_HEADER: Final = "X-Ragbot-Request"
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int | None] | None:
    try:
        parsed = URL(url)
    except ValueError:
        return None
    if parsed.scheme not in _DEFAULT_PORTS or not parsed.raw_host:
        return None
    return parsed.scheme, parsed.raw_host.lower().rstrip("."), parsed.port


def own_origin(request: web.Request) -> tuple[str, str, int | None] | None:
    """Ragbot's origin as the browser sees it (scheme and host as passed on by a trusted proxy)."""
    return _origin(f"{request.scheme}://{request.host}")


def sender_origin(request: web.Request) -> tuple[str, str, int | None] | None:
    """The origin the browser says the request came from: Origin, else the Referer's."""
    origin = request.headers.get("Origin")
    if origin is not None:
        return _origin(origin)  # "null" (a sandboxed or privacy-stripped sender) is no origin
    referer = request.headers.get("Referer")
    return _origin(referer) if referer else None


def refusal(request: web.Request) -> tuple[int, str] | None:
    """Why a state-changing request is refused (status, message), or None when it came from the chat page."""
    if request.path in (UPLOAD_PATH, MEDIA_PATH):
        if request.headers.get(REQUEST_HEADER) != "1":
            return 403, messages.WEB_NOT_FROM_THE_PAGE
    elif request.content_type != "application/json":
        return 415, messages.WEB_NOT_JSON
    sender = sender_origin(request)
    if sender is None or sender != own_origin(request):
        return 403, messages.WEB_NOT_FROM_THE_PAGE
    return None
