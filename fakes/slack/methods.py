"""The Web API methods of messages: auth.test, chat.* (posts, edits, native streams), status, replies, reactions."""

from __future__ import annotations

import base64
import binascii

from fakes.base import Json
from fakes.slack.content import blocks_text, content, stream_content
from fakes.slack.records import Ephemeral, Stream
from fakes.slack.state import SlackState
from fakes.slack.wire import Ctx, SlackError, json_list, opt


class WebMethods(SlackState):
    """FakeSlackAPI's Web API methods on messages: each takes one call's context and returns its answer's fields."""

    async def _auth_test(self, ctx: Ctx) -> Json:
        ws = ctx.bot
        answer: Json = {
            "url": f"https://{ws.team_name.replace(' ', '-').lower()}.slack.com/",
            "team": ws.team_name,
            "user": ws.bot_name,
            "team_id": ws.team_id,
            "user_id": ws.bot_user_id,
            "bot_id": ws.bot_id,
            "is_enterprise_install": False,
        }
        if ws.enterprise_id is not None:
            answer["enterprise_id"] = ws.enterprise_id
        return answer

    async def _post_message(self, ctx: Ctx) -> Json:
        channel = self._writable(ctx, refuse="not_in_channel")
        text, markdown, blocks = content(ctx.params)
        thread_ts = opt(ctx.params, "thread_ts")
        message = self._add(channel, ctx.bot.bot_user_id, ctx.bot.bot_id, thread_ts, text, markdown, blocks or [])
        if thread_ts is not None:
            self._statuses.pop((channel, thread_ts), None)  # Slack clears the status when the app replies
        return {"channel": channel, "ts": message.ts, "message": self._message_json(message)}

    async def _post_ephemeral(self, ctx: Ctx) -> Json:
        channel = self._writable(ctx)
        user = opt(ctx.params, "user")
        if user is None:
            raise SlackError("user_not_in_channel")
        text, markdown, blocks = content(ctx.params)
        shown = markdown if markdown is not None else blocks_text(blocks) if blocks else text or ""
        thread_ts = opt(ctx.params, "thread_ts")
        self._ephemerals.append(Ephemeral(channel, user, shown, blocks or [], thread_ts, "chat.postEphemeral"))
        return {"message_ts": self._next_ts()}

    async def _update(self, ctx: Ctx) -> Json:
        message = self._own(ctx, "cant_update_message")
        if message.stream is not None and self._stream_open(message):
            # Measured against live Slack by others (undocumented): a message still streaming refuses edits.
            raise SlackError("streaming_state_conflict")
        text, markdown, blocks = content(ctx.params)
        if markdown is not None:
            message.text, message.markdown, message.blocks = None, markdown, []
        else:
            message.text = text if text is not None else message.text
            message.blocks = blocks if blocks is not None else message.blocks  # omitted blocks stay (Slack's rule)
            message.markdown = None
        message.deltas = None
        self._edited(message)
        return {
            "channel": message.channel,
            "ts": message.ts,
            "text": message.text or "",
            "message": self._message_json(message),
        }

    async def _delete(self, ctx: Ctx) -> Json:
        message = self._own(ctx, "cant_delete_message")
        message.deleted = True
        return {"channel": message.channel, "ts": message.ts}

    async def _start_stream(self, ctx: Ctx) -> Json:
        channel = self._writable(ctx)
        if channel[0] in "CG":  # "Required when streaming to channels" (chat.startStream docs)
            for name in ("recipient_user_id", "recipient_team_id"):
                if not ctx.params.get(name):
                    raise SlackError(f"missing_{name}")
        delta, blocks, chunks, mode = stream_content(ctx.params)
        thread_ts = opt(ctx.params, "thread_ts")
        now = self._clock()
        message = self._add(channel, ctx.bot.bot_user_id, ctx.bot.bot_id, thread_ts, None, None, blocks)
        message.deltas = [delta] if delta else []
        message.chunks = chunks
        message.stream = Stream(now, now, mode)
        if thread_ts is not None:
            self._statuses.pop((channel, thread_ts), None)
        return {"channel": channel, "ts": message.ts}

    async def _append_stream(self, ctx: Ctx) -> Json:
        message = self._streaming(ctx)
        delta, blocks, chunks, mode = stream_content(ctx.params)
        if mode is None:
            raise SlackError("invalid_arguments")
        self._extend_stream(message, delta, blocks, chunks, mode)
        return {"channel": message.channel, "ts": message.ts}

    async def _stop_stream(self, ctx: Ctx) -> Json:
        message = self._streaming(ctx)
        delta, blocks, chunks, mode = stream_content(ctx.params)
        blocks += json_list(ctx.params.get("blocks"), "invalid_blocks") or []
        self._extend_stream(message, delta, blocks, chunks, mode)
        assert message.stream is not None
        message.stream.state = "stopped"
        return {"channel": message.channel, "ts": message.ts, "message": self._message_json(message)}

    async def _set_status(self, ctx: Ctx) -> Json:
        channel = self._writable(ctx, key="channel_id")
        thread_ts = opt(ctx.params, "thread_ts")
        status = ctx.params.get("status")
        if thread_ts is None or status is None:
            raise SlackError("invalid_arguments")
        if status:
            self._statuses[(channel, thread_ts)] = str(status)
        else:
            self._statuses.pop((channel, thread_ts), None)
        return {}

    async def _replies(self, ctx: Ctx) -> Json:
        channel = self._writable(ctx)
        thread = self._thread(channel, opt(ctx.params, "ts") or "")
        if not thread:
            raise SlackError("thread_not_found")
        try:
            limit = min(max(1, int(ctx.params.get("limit") or 1000)), self._page_max)
        except ValueError as exc:
            raise SlackError("invalid_limit") from exc
        start = 0
        cursor = opt(ctx.params, "cursor")
        if cursor:
            try:
                start = int(base64.b64decode(cursor).decode().removeprefix("next:"))
            except (ValueError, binascii.Error) as exc:
                raise SlackError("invalid_cursor") from exc
        page = thread[start : start + limit]
        more = start + limit < len(thread)
        cursor_out = base64.b64encode(f"next:{start + limit}".encode()).decode() if more else ""
        return {
            "messages": [self._message_json(m) for m in page],
            "has_more": more,
            "response_metadata": {"next_cursor": cursor_out},
        }

    async def _react(self, ctx: Ctx) -> Json:
        message, name = self._reaction_target(ctx)
        if name in message.reactions:
            raise SlackError("already_reacted")
        message.reactions.append(name)
        return {}

    async def _unreact(self, ctx: Ctx) -> Json:
        message, name = self._reaction_target(ctx)
        if name not in message.reactions:
            raise SlackError("no_reaction")
        message.reactions.remove(name)
        return {}
