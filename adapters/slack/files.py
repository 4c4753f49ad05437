"""Downloading a file someone shared with the bot: files.info first, the size checked, Slack's sign-in page caught."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import words as slack_words
from adapters.slack.calls import call
from bot.errors import PlatformError, UserFacingError
from bot.words import messages
from bot.words.catalogue import DEFAULT_LANGUAGE

log = logging.getLogger(__name__)

_HTML_NAMES: Final = (".html", ".htm", ".xhtml")
_CHUNK: Final = 1 << 16
_TIMEOUT: Final = aiohttp.ClientTimeout(total=300, sock_connect=30)


def _expects_html(file: Mapping[str, Any]) -> bool:
    name = str(file.get("name") or "").lower()
    return str(file.get("mimetype") or "").startswith("text/html") or name.endswith(_HTML_NAMES)


def _cannot(say: Callable[[str], str]) -> UserFacingError:
    """Why a file cannot be had, in whatever language the command boundary asks for."""
    return UserFacingError(say(DEFAULT_LANGUAGE), in_language=say)


async def download(client: AsyncWebClient, entry: Mapping[str, Any], limit: int) -> bytes:
    """The file's bytes; a UserFacingError the sender can act on when Slack gives anything else."""
    name = str(entry.get("name") or entry.get("id") or "the file")
    try:
        info = await call(client.files_info(file=str(entry.get("id", ""))))
    except PlatformError as exc:
        log.warning("slack=file_info_failed file=%s reason=%s", entry.get("id"), exc)
        raise _cannot(lambda lang: slack_words.file_missing(name, lang)) from exc
    file: Mapping[str, Any] = info["file"]
    size = int(file.get("size") or 0)
    if size > limit:
        log.info("slack=file_refused reason=too_large size=%d limit=%d setting=INGEST_MAX_FILE_MB", size, limit)
        raise _cannot(lambda lang: messages.file_too_large(name, size, limit, lang))
    url = str(file.get("url_private_download") or file.get("url_private") or "")
    if not url:
        raise _cannot(lambda lang: messages.file_unreadable(name, lang))
    headers = {"Authorization": f"Bearer {client.token}"}
    try:
        async with (
            aiohttp.ClientSession(timeout=_TIMEOUT) as session,
            session.get(url, headers=headers) as response,
        ):
            if response.status != 200:
                log.warning("slack=file_download_failed file=%s status=%d", entry.get("id"), response.status)
                raise _cannot(lambda lang: messages.file_unreadable(name, lang))
            # Without a valid token or files:read Slack answers 200 with its sign-in page, not an error status.
            if response.content_type == "text/html" and not _expects_html(file):
                log.warning("slack=file_download_login_page file=%s", entry.get("id"))
                raise _cannot(lambda lang: slack_words.file_login_page(name, lang))
            data = bytearray()
            async for chunk in response.content.iter_chunked(_CHUNK):
                data += chunk
                if len(data) > limit:
                    log.info("slack=file_refused reason=too_large limit=%d setting=INGEST_MAX_FILE_MB", limit)
                    raise _cannot(lambda lang: messages.file_too_large(name, None, limit, lang))
            return bytes(data)
    except (aiohttp.ClientError, TimeoutError) as exc:
        log.warning("slack=file_download_failed file=%s reason=%r", entry.get("id"), exc)
        raise _cannot(lambda lang: messages.file_unreadable(name, lang)) from exc
