"""response_url: the URL a slash command or a button click carries, which takes a few posts for a while."""

from __future__ import annotations

import uuid

from aiohttp import web

from fakes.base import Json
from fakes.slack.content import blocks_text
from fakes.slack.records import Ephemeral, Hook, ResponsePost
from fakes.slack.state import SlackState
from fakes.slack.wire import json_list, opt

RESPONSE_URL_USES = 5  # a response_url takes 5 posts within 30 minutes (slash command docs)
RESPONSE_URL_LIFETIME = 30 * 60.0


class ResponseUrls(SlackState):
    """FakeSlackAPI's response_urls: handed out, posted to (in the channel, ephemeral, or replacing the original)."""

    def response_url(
        self,
        *,
        team_id: str | None = None,
        channel: str | None = None,
        user: str | None = None,
        message_ts: str | None = None,
    ) -> str:
        """A fresh response_url; in_channel posts land in `channel`, replace_original edits `message_ts`."""
        path = f"/commands/{team_id or 'T0'}/{next(self._seq)}/{uuid.uuid4().hex}"
        self._hooks[path] = Hook(team_id, channel, user, message_ts, self._clock())
        return self.url(path)

    def responses(self, url: str | None = None) -> list[ResponsePost]:
        """POSTs to response_urls (to one URL or all), refused ones included."""
        return [post for post in self._responses if url is None or post.url == url]

    async def _respond(self, request: web.Request) -> web.StreamResponse:
        hook = self._hooks.get(request.path)
        try:
            body = await request.json()
        except ValueError:
            body = None
        now = self._clock()
        if hook is None:
            status, answer = 404, "no_service"
        elif not isinstance(body, dict):
            status, answer = 400, "invalid_payload"
        elif now - hook.created > RESPONSE_URL_LIFETIME:
            status, answer = 404, "expired_url"
        elif hook.uses >= RESPONSE_URL_USES:
            status, answer = 404, "used_url"
        elif not (body.get("text") or body.get("blocks") or body.get("delete_original")):
            status, answer = 400, "no_text"
        else:
            hook.uses += 1
            self._apply_response(hook, body)
            status, answer = 200, "ok"
        self._responses.append(ResponsePost(str(request.url), body if isinstance(body, dict) else {}, status, now))
        self._notify()
        return web.Response(status=status, text=answer)

    def _apply_response(self, hook: Hook, body: Json) -> None:
        text = str(body.get("text") or "")
        blocks = json_list(body.get("blocks"), "invalid_blocks") or []
        original = self._messages.get((hook.channel or "", hook.message_ts or ""))
        if body.get("delete_original") and original is not None:
            original.deleted = True
        elif body.get("replace_original") and original is not None:
            original.text, original.blocks, original.markdown, original.deltas = text, blocks, None, None
            self._edited(original)
        elif body.get("response_type") == "in_channel" and hook.channel is not None:
            workspace = self._workspaces.get(hook.team_id or "")
            user, bot_id = (workspace.bot_user_id, workspace.bot_id) if workspace else ("U0FAKEBOT", "B0FAKEBOT")
            self._add(hook.channel, user, bot_id, opt(body, "thread_ts"), text, None, blocks)
        else:
            shown = blocks_text(blocks) if blocks else text
            self._ephemerals.append(
                Ephemeral(hook.channel, hook.user, shown, blocks, opt(body, "thread_ts"), "response_url")
            )
