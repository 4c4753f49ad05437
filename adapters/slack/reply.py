"""Replying in Slack: a channel thread or DM as a ReplyTarget, edit-mode streaming, slash-command responses."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import aiohttp
from slack_sdk.errors import SlackClientError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from adapters.slack import words as slack_words
from adapters.slack.budget import Pacer
from adapters.slack.calls import call
from adapters.slack.native import NativeReplyStream
from adapters.slack.render import (
    MAX_MARKDOWN,
    Block,
    body,
    escape,
    fallback_text,
    markdown_block,
    neutralise,
    trailing_blocks,
)
from bot.errors import DeliveryFailed, PlatformError, PlatformRateLimited, PlatformUnavailable
from bot.metrics import PlatformObserver
from bot.ports import ReplyLimits, ReplyStream
from bot.reply.stream import EditingReplyStream, StreamWrapper
from bot.types import Answer, MessageRef
from bot.words.catalogue import DEFAULT_LANGUAGE

log = logging.getLogger(__name__)

T = TypeVar("T")

# chat.update is about 50 a minute for the whole workspace, so one answer edits at most every 2 s.
EDIT_LIMITS: Final = ReplyLimits(max_length=MAX_MARKDOWN, min_edit_interval=2.0, first_flush=0.5)
# A response_url takes 5 posts in 30 minutes: progress edits are rare, the outcome always goes.
RESPONSE_LIMITS: Final = ReplyLimits(max_length=MAX_MARKDOWN, min_edit_interval=60.0, first_flush=0.5)


class SlackTarget:
    """One channel thread or DM as a ReplyTarget, bound to the workspace's client and budgets."""

    def __init__(
        self,
        client: AsyncWebClient,
        channel: str,
        thread_ts: str,
        *,
        workspace: str,
        pacer: Pacer,
        observer: PlatformObserver,
        recipient_user: str,
        recipient_team: str,
        native: bool,
        lang: str = DEFAULT_LANGUAGE,
    ) -> None:
        self.client = client
        self.channel = channel
        self.thread_ts = thread_ts
        self.workspace = workspace
        self.pacer = pacer
        self.observer = observer
        self.recipient_user = recipient_user
        self.recipient_team = recipient_team
        self.native = native
        # The language the chat is answered in: what its status line says.
        self.lang = lang
        # Set while an answer's final text is delivered: it waits its turn in the budget and carries these blocks.
        self.final_blocks: list[Block] | None = None
        self.blocks_shown = False
        self._status_set = False

    async def api(self, method: str, request: Callable[[], Awaitable[T]], *, final: bool) -> T:
        """One Web API call within the workspace's budget for `method`; a 429 holds back every answer's calls."""
        budget = self.pacer.budget(self.workspace, method, self.channel)
        if final:
            await budget.take()
        elif wait := budget.try_take():
            raise PlatformRateLimited(wait, f"slack {method} budget", local=True)
        try:
            return await call(request())
        except PlatformRateLimited as exc:
            budget.penalise(exc.retry_after)
            raise
        except PlatformUnavailable:
            self.observer.platform_error()
            raise

    @property
    def limits(self) -> ReplyLimits:
        """12,000 characters of Markdown per message; one edit per 2 s per answer."""
        return EDIT_LIMITS

    def render(self, markdown: str) -> str:
        """Slack takes standard Markdown (markdown_text, markdown blocks), its own mention and link syntax defused."""
        return neutralise(markdown)

    def _content(self, text: str, markup: bool) -> dict[str, Any]:
        """Every post and edit's content: Markdown defused, plain text (mrkdwn) escaped."""
        if self.final_blocks is not None:
            self.blocks_shown = True
            return {"blocks": [markdown_block(text), *self.final_blocks], "text": fallback_text(text)}
        return {"markdown_text": neutralise(text)} if markup else {"text": escape(text)}

    async def send(self, text: str, *, markup: bool = True) -> MessageRef:
        """A new message in the thread."""
        content = self._content(text, markup)
        response: AsyncSlackResponse = await self.api(
            "chat.postMessage",
            lambda: self.client.chat_postMessage(channel=self.channel, thread_ts=self.thread_ts or None, **content),
            final=self.final_blocks is not None,
        )
        return MessageRef(str(response["ts"]))

    async def edit(self, ref: MessageRef, text: str, *, markup: bool = True) -> None:
        """Replace a message's text (chat.update, from the workspace's shared budget)."""
        content = self._content(text, markup)
        await self.api(
            "chat.update",
            lambda: self.client.chat_update(channel=self.channel, ts=ref.id, **content),
            final=self.final_blocks is not None,
        )

    async def typing(self) -> None:
        """The thread's status line ("is searching the knowledge base…"), set once; Slack clears it on reply."""
        if self._status_set or not self.thread_ts:
            return
        self._status_set = True
        try:
            await call(
                self.client.assistant_threads_setStatus(
                    channel_id=self.channel, thread_ts=self.thread_ts, status=slack_words.status(self.lang)
                )
            )
        except PlatformError as exc:
            # Decoration only: an old workspace plan or a missing scope must not cost the answer.
            log.info("slack=status_not_set reason=%s", exc)

    def open_stream(self) -> ReplyStream:
        """Native streaming (chat.startStream…) or one message edited in place, as configured.

        Slack streams only replies in a thread outside channels, so a DM answered in the DM itself is edited in place.
        """
        if self.native and self.thread_ts:
            return NativeReplyStream(self)
        return EditStream(EditingReplyStream(self, observer=self.observer, compose=body), self)


class EditStream(StreamWrapper):
    """Edit-mode streaming whose final message carries the sources and feedback buttons as blocks."""

    def __init__(self, inner: EditingReplyStream, target: SlackTarget) -> None:
        super().__init__(inner)
        self._target = target

    async def finish(self, answer: Answer) -> MessageRef | None:
        """The answer's text with its trailing blocks, sent ahead of every answer's progress edits."""
        blocks = trailing_blocks(answer)
        self._target.final_blocks = blocks
        try:
            ref = await self._inner.finish(answer)
        finally:
            self._target.final_blocks = None
        if ref is not None and blocks and not self._target.blocks_shown:
            # The final text was already on screen, so no call carried the blocks: add them now.
            self._target.final_blocks = blocks
            try:
                await self._target.edit(ref, body(answer))
            except PlatformError as exc:
                log.warning("slack=trailing_blocks_failed reason=%s", exc)
            finally:
                self._target.final_blocks = None
        return ref

    async def fail(self, text: str) -> MessageRef | None:
        """See ReplyStream."""
        self._target.final_blocks = []
        try:
            return await self._inner.fail(text)
        finally:
            self._target.final_blocks = None


Respond = Callable[..., Awaitable[Any]]
"""Bolt's `respond`: posts to the slash command's response_url."""


class ResponseTarget:
    """A slash command's reply: messages posted to its response_url, visible only to the person who ran it."""

    def __init__(self, respond: Respond) -> None:
        self._respond = respond

    @property
    def limits(self) -> ReplyLimits:
        """Five posts per response_url: progress is rare."""
        return RESPONSE_LIMITS

    def render(self, markdown: str) -> str:
        """Standard Markdown, shown in a markdown block, its Slack syntax defused."""
        return neutralise(markdown)

    async def _post(self, text: str, *, replace: bool) -> None:
        try:
            response = await self._respond(
                text=fallback_text(text),
                blocks=[markdown_block(text)],
                response_type="ephemeral",
                replace_original=replace,
            )
        except (aiohttp.ClientError, TimeoutError, SlackClientError) as exc:
            raise PlatformError(f"response_url unreachable: {exc!r}") from exc
        status = getattr(response, "status_code", 200)
        if status == 429:
            raise PlatformRateLimited(1.0, "slack response_url")
        if status >= 400:
            raise DeliveryFailed(f"response_url answered {status}")

    async def send(self, text: str, *, markup: bool = True) -> MessageRef:
        """An ephemeral message to the person."""
        await self._post(text, replace=False)
        return MessageRef("response")

    async def edit(self, ref: MessageRef, text: str, *, markup: bool = True) -> None:
        """Replace the last ephemeral message."""
        await self._post(text, replace=True)

    async def typing(self) -> None:
        """No typing signal for slash commands."""

    def open_stream(self) -> ReplyStream:
        """One ephemeral message edited rarely, then the outcome."""
        return EditingReplyStream(self)
