"""Files in Slack: add_file, files.info, and downloads from files.slack.com that want the bot's token."""

from __future__ import annotations

import time
from urllib.parse import quote

from aiohttp import web

from fakes.base import Json
from fakes.slack.records import StoredFile
from fakes.slack.state import SlackState
from fakes.slack.wire import Ctx, SlackError, opt

# What files.slack.com answers a download without a valid token: a 200 sign-in page, not a 4xx.
LOGIN_PAGE = '<!DOCTYPE html><html lang="en"><head><title>Slack</title></head><body>Sign in to Slack</body></html>'


class Files(SlackState):
    """FakeSlackAPI's files: uploaded by a test, described by files.info, downloaded with a bot token."""

    def add_file(
        self,
        team_id: str,
        name: str,
        content: bytes,
        *,
        mimetype: str,
        filetype: str = "",
        size: int | None = None,
        owner: str = "U0FAKEUSER",
        downloadable: bool = True,
        duration_ms: int | None = None,
    ) -> Json:
        """A file uploaded in a workspace; returns its Slack file object (size may lie about the content).

        `downloadable=False` makes its download answer Slack's sign-in page whatever the token; `duration_ms` is an
        audio clip's length, as Slack gives it for clips recorded in the app.
        """
        file_id = f"F{next(self._seq):09d}"
        key = f"{team_id}-{file_id}"
        now = int(time.time())
        info: Json = {
            "id": file_id,
            "created": now,
            "timestamp": now,
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "filetype": filetype or name.rsplit(".", 1)[-1].lower(),
            "pretty_type": (filetype or name.rsplit(".", 1)[-1]).upper(),
            "user": owner,
            "user_team": team_id,
            "editable": False,
            "size": len(content) if size is None else size,
            "mode": "hosted",
            "is_external": False,
            "external_type": "",
            "is_public": False,
            "public_url_shared": False,
            "display_as_bot": False,
            "username": "",
            "url_private": self.url(f"/files-pri/{key}/{quote(name)}"),
            "url_private_download": self.url(f"/files-pri/{key}/download/{quote(name)}"),
            "permalink": f"https://{team_id.lower()}.slack.com/files/{owner}/{file_id}/{quote(name)}",
        }
        if duration_ms is not None:
            info["duration_ms"] = duration_ms
        self._files[key] = StoredFile(team_id, info, content, downloadable)
        return dict(info)

    async def _file_info(self, ctx: Ctx) -> Json:
        file_id = opt(ctx.params, "file") or ""
        stored = self._files.get(f"{ctx.bot.team_id}-{file_id}")
        if stored is None:
            raise SlackError("file_not_found")
        return {"file": dict(stored.info), "comments": [], "response_metadata": {"next_cursor": ""}}

    async def _download(self, request: web.Request) -> web.StreamResponse:
        stored = self._files.get(request.match_info["key"])
        header = request.headers.get("Authorization", "")
        token = header[len("Bearer ") :].strip() if header.startswith("Bearer ") else ""
        team = self._token_team.get(token)
        valid = team is not None and token not in self._revoked and team not in self._uninstalled
        if stored is None or not valid or team != stored.team_id or not stored.downloadable:
            self.login_pages_served += 1
            self._notify()
            return web.Response(text=LOGIN_PAGE, content_type="text/html")
        self.files_download_count += 1
        self._notify()
        headers = {"Content-Type": str(stored.info["mimetype"])}
        if "/download/" in request.path:
            headers["Content-Disposition"] = f'attachment; filename="{stored.info["name"]}"'
        return web.Response(body=stored.content, headers=headers)
