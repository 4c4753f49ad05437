"""What Slack keeps for the app (workspaces, channels, messages, streams, files, hooks), set up, read and shown."""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections.abc import Callable

from aiohttp import web

from fakes.base import FakeAPI, Json
from fakes.slack.content import reads
from fakes.slack.records import (
    Channel,
    Ephemeral,
    Hook,
    Message,
    OAuthCode,
    ResponsePost,
    Shown,
    StoredFile,
    Workspace,
)
from fakes.slack.wire import Ctx, SlackError, opt

_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{2,}")


class SlackState(FakeAPI):
    """The base of FakeSlackAPI: its stored state, the scene a test sets up, and what a person would see."""

    def __init__(
        self,
        *,
        stream_lifetime: float,
        stream_idle: float,
        replies_page_max: int,
        app_id: str,
        clock: Callable[[], float],
    ) -> None:
        super().__init__()
        self.app_id = app_id
        self.socket_acks: list[Json] = []
        self.files_download_count = 0
        self.login_pages_served = 0
        self._lifetime = stream_lifetime
        self._idle = stream_idle
        self._page_max = replies_page_max
        self._clock = clock
        self._workspaces: dict[str, Workspace] = {}
        self._token_team: dict[str, str] = {}
        self._revoked: set[str] = set()
        self._uninstalled: set[str] = set()
        self._app_tokens: set[str] = set()
        self._channels: dict[str, Channel] = {}
        self._messages: dict[tuple[str, str], Message] = {}
        self._statuses: dict[tuple[str, str], str] = {}
        self._ephemerals: list[Ephemeral] = []
        # Modals opened with views.open (fakes/slack/views.py), and the trigger_ids they used up.
        self.views_opened: list[Json] = []
        self._triggers: set[str] = set()
        self._responses: list[ResponsePost] = []
        self._files: dict[str, StoredFile] = {}
        self._hooks: dict[str, Hook] = {}
        self._codes: dict[str, OAuthCode] = {}
        self._tickets: set[str] = set()
        self._sockets: list[web.WebSocketResponse] = []
        self._acks: dict[str, asyncio.Future[Json]] = {}
        self._epoch = int(time.time())
        self._seq = itertools.count(1)

    def url(self, path: str) -> str:
        """An absolute URL on the fake, e.g. url("/files-pri/...")."""
        return f"http://127.0.0.1:{self._port}{path}"

    # --- Setting the scene ------------------------------------------------------------------------------------------

    def add_workspace(
        self,
        team_id: str,
        *,
        bot_token: str,
        bot_user_id: str,
        bot_id: str,
        team_name: str = "",
        enterprise_id: str | None = None,
    ) -> Workspace:
        """Install the app in a workspace: its bot token works from now on (again, after an uninstall)."""
        workspace = Workspace(team_id, bot_token, bot_user_id, bot_id, team_name or team_id.lower(), enterprise_id)
        self._workspaces[team_id] = workspace
        self._token_team[bot_token] = team_id
        self._revoked.discard(bot_token)
        self._uninstalled.discard(team_id)
        return workspace

    def workspace(self, team_id: str) -> Workspace:
        """The workspace installed under this team id."""
        return self._workspaces[team_id]

    def add_app_token(self, token: str) -> None:
        """An app-level token (xapp-...), good only for apps.connections.open."""
        self._app_tokens.add(token)

    def revoke(self, token: str) -> None:
        """Later calls with this token get token_revoked."""
        self._revoked.add(token)

    def uninstall(self, team_id: str) -> None:
        """The app is removed from the workspace: its bot tokens get account_inactive (a deleted bot, per Slack)."""
        self._uninstalled.add(team_id)

    def remove_bot(self, team_id: str, channel: str) -> None:
        """The bot leaves a channel: posts there get not_in_channel, other writes channel_not_found."""
        self._channel(team_id, channel).bot_member = False

    def user_message(self, team_id: str, channel: str, user: str, text: str, *, thread_ts: str | None = None) -> str:
        """Store a person's message (the tests deliver the matching event themselves); returns its ts."""
        self._channel(team_id, channel)
        return self._add(channel, user, thread_ts=thread_ts, text=text).ts

    def app_message(
        self, team_id: str, channel: str, bot_id: str, text: str, *, user: str = "", thread_ts: str | None = None
    ) -> str:
        """Store an app's message: another bot's (with its bot user), an incoming webhook's (no user); its ts."""
        self._channel(team_id, channel)
        return self._add(channel, user, bot_id=bot_id, thread_ts=thread_ts, text=text).ts

    def expire_stream(self, ts: str) -> None:
        """End a stream at once, as Slack does when it ages out: appends and stops then fail."""
        for message in self._messages.values():
            if message.ts == ts and message.stream is not None and message.stream.state == "open":
                message.stream.state = "expired"

    # --- Looking ----------------------------------------------------------------------------------------------------

    def visible(self, channel: str, *, thread_ts: str | None = None) -> list[Shown]:
        """What a person sees in a channel, oldest first: every message, or with thread_ts that thread only."""
        if thread_ts is not None:
            return self.thread(channel, thread_ts)
        return [self._shown(m) for (chan, _), m in self._messages.items() if chan == channel and not m.deleted]

    def thread(self, channel: str, thread_ts: str) -> list[Shown]:
        """A thread as a person reads it: the root, then its replies."""
        return [self._shown(m) for m in self._thread(channel, thread_ts)]

    def message(self, channel: str, ts: str) -> Shown:
        """One message as a person reads it (KeyError if there is none)."""
        return self._shown(self._messages[(channel, ts)])

    def status(self, channel: str, thread_ts: str) -> str:
        """The assistant status shown under a thread ("" when none or cleared)."""
        return self._statuses.get((channel, thread_ts), "")

    def ephemeral(self, channel: str | None = None) -> list[Ephemeral]:
        """Ephemeral messages (chat.postEphemeral and response_url), in one channel or all."""
        return [item for item in self._ephemerals if channel is None or item.channel == channel]

    def reactions(self, channel: str, ts: str) -> list[str]:
        """The bot's reactions on a message."""
        return list(self._messages[(channel, ts)].reactions)

    # --- Messages and channels --------------------------------------------------------------------------------------

    def _next_ts(self) -> str:
        return f"{self._epoch}.{next(self._seq):06d}"

    def _channel(self, team_id: str, channel: str) -> Channel:
        if not _CHANNEL_ID.fullmatch(channel):
            raise SlackError("channel_not_found")
        found = self._channels.setdefault(channel, Channel(team_id))
        if found.team_id != team_id:
            raise SlackError("channel_not_found")  # another workspace's channel is invisible
        return found

    def _writable(self, ctx: Ctx, *, key: str = "channel", refuse: str = "channel_not_found") -> str:
        channel = opt(ctx.params, key) or ""
        if not self._channel(ctx.bot.team_id, channel).bot_member:
            raise SlackError(refuse)
        return channel

    def _add(
        self,
        channel: str,
        user: str,
        bot_id: str | None = None,
        thread_ts: str | None = None,
        text: str | None = None,
        markdown: str | None = None,
        blocks: list[Json] | None = None,
    ) -> Message:
        message = Message(channel, self._next_ts(), user, bot_id, thread_ts, text, markdown, blocks or [])
        self._messages[(channel, message.ts)] = message
        return message

    def _edited(self, message: Message) -> None:
        message.edits += 1
        message.edited_ts = self._next_ts()

    def _own(self, ctx: Ctx, refuse: str) -> Message:
        channel = self._writable(ctx)
        message = self._messages.get((channel, opt(ctx.params, "ts") or ""))
        if message is None or message.deleted:
            raise SlackError("message_not_found")
        if message.bot_id != ctx.bot.bot_id:
            raise SlackError(refuse)
        return message

    def _streaming(self, ctx: Ctx) -> Message:
        message = self._own(ctx, "message_not_owned_by_app")
        if message.stream is None or not self._stream_open(message):
            raise SlackError("message_not_in_streaming_state")
        return message

    def _stream_open(self, message: Message) -> bool:
        """Whether a stream still takes appends; it ends `stream_lifetime` after start or `stream_idle` after use."""
        stream = message.stream
        if stream is None:
            return False
        now = self._clock()
        if stream.state == "open" and (now - stream.started >= self._lifetime or now - stream.last >= self._idle):
            stream.state = "expired"
        return stream.state == "open"

    def _extend_stream(
        self, message: Message, delta: str, blocks: list[Json], chunks: list[Json], mode: str | None
    ) -> None:
        stream = message.stream
        assert stream is not None
        assert message.deltas is not None
        if mode is not None and stream.mode is not None and mode != stream.mode:
            # Measured by others, undocumented: a stream keeps the shape (markdown_text or chunks) it opened with.
            raise SlackError("streaming_mode_mismatch")
        stream.mode = stream.mode or mode
        stream.last = self._clock()
        if delta:
            message.deltas.append(delta)
        message.blocks += blocks
        message.chunks += chunks

    def _thread(self, channel: str, thread_ts: str) -> list[Message]:
        root = self._messages.get((channel, thread_ts))
        if root is None or root.deleted:
            return []
        if root.thread_ts is not None and root.thread_ts != root.ts:
            return self._thread(channel, root.thread_ts)  # a reply's ts finds its whole thread
        replies = [m for (c, _), m in self._messages.items() if c == channel and m.thread_ts == thread_ts]
        return [root, *(m for m in replies if m is not root and not m.deleted)]

    def _reaction_target(self, ctx: Ctx) -> tuple[Message, str]:
        channel = self._writable(ctx)
        message = self._messages.get((channel, opt(ctx.params, "timestamp") or ""))
        name = opt(ctx.params, "name")
        if message is None or message.deleted:
            raise SlackError("message_not_found")
        if not name:
            raise SlackError("invalid_name")
        return message, name

    def _shown(self, message: Message) -> Shown:
        streaming = message.stream is not None and self._stream_open(message)
        return Shown(
            message.ts,
            message.user,
            message.thread_ts,
            reads(message),
            list(message.blocks),
            streaming,
            message.edits,
            message.bot_id,
        )

    def _message_json(self, message: Message) -> Json:
        # With blocks, `text` is the message's own fallback; a stream or a markdown_text message reads as written.
        text = message.text if message.text is not None and message.deltas is None else reads(message)
        out: Json = {"type": "message", "ts": message.ts, "user": message.user, "text": text}
        if message.bot_id is not None:
            out.update(bot_id=message.bot_id, app_id=self.app_id)
        if message.blocks:
            out["blocks"] = message.blocks
        if message.thread_ts is not None:
            out["thread_ts"] = message.thread_ts
        replies = [m for (c, _), m in self._messages.items() if c == message.channel and m.thread_ts == message.ts]
        replies = [m for m in replies if m is not message and not m.deleted]
        if replies:
            out.update(thread_ts=message.ts, reply_count=len(replies))
        if message.edited_ts is not None:
            out["edited"] = {"user": message.user, "ts": message.edited_ts}
        return out
