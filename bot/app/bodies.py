"""Request body limits: 1 MB on every route unless a route streams larger bodies and says how large.

aiohttp enforces `client_max_size` only when a handler reads the whole body, after it arrived; this refuses by
Content-Length before anything is read, so a webhook's body (Bolt reads /slack/events whole before checking its
signature) or a JSON route's cannot make the process hold megabytes for a stranger.
"""

from __future__ import annotations

import logging
from typing import Final

from aiohttp import web
from aiohttp.typedefs import Handler

from bot.words import messages

log = logging.getLogger(__name__)

MAX_BODY: Final = 1_000_000
LARGE_BODIES: Final = web.AppKey("large_bodies", dict[str, int])


def allow_large_bodies(app: web.Application, path: str, limit: int) -> None:
    """Let POSTs to `path` send up to `limit` bytes (the route must read them in chunks and stop at its limit)."""
    app[LARGE_BODIES][path] = limit


@web.middleware
async def limit_bodies(request: web.Request, handler: Handler) -> web.StreamResponse:
    """413 before any read when Content-Length is over the route's limit (a chunked body stops at read())."""
    limit = request.app[LARGE_BODIES].get(request.path, MAX_BODY)
    length = request.content_length
    if length is not None and length > limit:
        log.info("http=refused reason=too_large path=%s length=%d limit=%d", request.path, length, limit)
        response = web.json_response({"error": messages.request_too_large(limit)}, status=413)
        response.force_close()  # the unread body is not worth keeping the connection for
        return response
    return await handler(request)
