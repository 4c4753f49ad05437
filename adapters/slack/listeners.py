"""What ragbot does with each Slack event, slash command and button click (registered on Bolt by app.py)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import words as slack_words
from adapters.slack.agent_listeners import AgentViewListeners, viewed_in
from adapters.slack.budget import Pacer
from adapters.slack.calls import call, unreachable_notice
from adapters.slack.config import SlackConfig
from adapters.slack.files import download
from adapters.slack.history import import_thread
from adapters.slack.reasons import ask_why_block, pressed_under
from adapters.slack.render import (
    MAX_MARKDOWN,
    Block,
    fallback_text,
    is_feedback_block,
    markdown_block,
    parse_feedback,
    shows_text,
    with_choice,
)
from adapters.slack.reply import ResponseTarget, SlackTarget
from adapters.slack.stores import DatabaseInstallationStore
from adapters.slack.translate import (
    PLATFORM,
    Notice,
    Place,
    command_style,
    conversation_key,
    is_person_speaking,
    mentions,
    mistyped_word,
    place,
    plain_text,
    slash_command,
    translate,
    workspace_id,
)
from adapters.slack.viewing import is_agent_view
from bot.chat.manager import ConversationManager
from bot.chat.popular import PopularQuestions
from bot.chat.threads import CONVERSATION_COMMANDS
from bot.commands.registry import Asker
from bot.errors import DeliveryFailed, PlatformError
from bot.ports import ReplyTarget
from bot.reply.deliver import deliver_text
from bot.types import Command, IncomingMessage, UserRef
from bot.words import messages

log = logging.getLogger(__name__)

_INSTALLER_TTL: Final = 60.0
# Slack waits 3 s for "received" and then sends again: a question's store gets at most this long before it is told.
_ACK_WITHIN: Final = 2.0
# Called once a delivery needs nothing more before Slack hears it arrived (its question stored, or nothing to store).
Settle = Callable[[object], None]


class SlackListeners:
    """Bolt's listeners: translate, pick the reply target, hand the message to the conversation manager."""

    def __init__(
        self,
        manager: ConversationManager,
        config: SlackConfig,
        installations: DatabaseInstallationStore | None,
        popular: PopularQuestions,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._manager = manager
        self._config = config
        self._installations = installations
        self._clock = clock
        self._pacer = Pacer(share=manager.share)
        self._style = command_style(config.command)
        self._installers: dict[str, tuple[float, str]] = {}
        # Turns and commands in flight, so stopping can let them finish.
        self.work: set[asyncio.Task[Any]] = set()
        self.agent = AgentViewListeners(
            manager, popular, self._style, spawn=self._spawn, installed_by=self._installed_by
        )

    async def on_mention(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        """A mention in a channel: answered in a thread under it."""
        where = place(event, self._workspace(context))
        if where.private:
            return  # a mention in a DM also arrives as the DM message, answered there
        await self._received(lambda settle: self._answer(event, where, context, settle, continuing=False))

    async def on_message(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        """A DM, or a reply in a thread ragbot answers in (other channel messages are not for it)."""
        if not is_person_speaking(event):
            return
        where = await self._place(event, self._workspace(context))
        if not where.private:
            if mentions(str(event.get("text") or ""), context.bot_user_id or ""):
                return  # the app_mention event answers it
            in_thread = bool(event.get("thread_ts")) and event.get("thread_ts") != event.get("ts")
            if not in_thread or not await self._manager.known(conversation_key(where)):
                return  # channel chatter: only mentions and threads ragbot answers in are for it
        await self._received(lambda settle: self._answer(event, where, context, settle, continuing=True))

    async def _answer(
        self, event: Mapping[str, Any], where: Place, context: AsyncBoltContext, settle: Settle, *, continuing: bool
    ) -> None:
        client = context.client
        assert client is not None
        bot_user_id = context.bot_user_id or ""
        user = str(event.get("user") or "")
        if not continuing and event.get("thread_ts") and event.get("thread_ts") != event.get("ts"):
            key = conversation_key(where)
            if not await self._manager.known(key):
                await import_thread(self._manager, self._pacer, client, key, event, bot_user_id, context.bot_id or "")

        async def read(entry: Mapping[str, Any]) -> bytes:
            return await download(client, entry, self._config.download_limit)

        translated = translate(
            event,
            where,
            bot_user_id=bot_user_id,
            continuing=continuing,
            read=read,
            style=self._style,
            verified_admin=await self._installed_by(where.workspace, user, context),
        )
        if translated is None:
            return
        # The turn decides its language again from the same message and settings; the status line needs it first.
        said = "" if isinstance(translated, Notice) else _said(translated)
        lang = await self._manager.language(conversation_key(where), said)
        target = self.target(client, where, user, str(event.get("team") or context.team_id or ""), lang)
        if isinstance(translated, Notice):
            await self._notify(target, translated.say(lang))
            return
        if translated.command is not None:
            settle(None)  # a command (a shared file's ingestion) stores no question, and may run for minutes
            await self._manager.handle(translated, target, on_accepted=settle)
            return
        await self.agent.name_thread(client, where, translated.text)
        kb_ids = await self.agent.focus(where, viewed_in(event, where, self.agent.threads))
        await self._manager.handle(translated, target, on_accepted=settle, kb_ids=kb_ids)

    async def _place(self, event: Mapping[str, Any], workspace: str) -> Place:
        """Where a message event happened; a DM thread of the agent view or of an assistant thread is kept apart."""
        where = place(event, workspace)
        if not where.private:
            return where
        if is_agent_view(event):
            return place(event, workspace, threads_apart=True)
        if where.reply_thread and (
            self.agent.threads.known(where.channel, where.reply_thread)
            or await self._manager.known(conversation_key(place(event, workspace, threads_apart=True)))
        ):
            return place(event, workspace, threads_apart=True)
        return where

    def target(self, client: AsyncWebClient, where: Place, user: str, team: str, lang: str) -> SlackTarget:
        """A reply target in `where` for `user` of `team`, answering in `lang`."""
        return SlackTarget(
            client,
            where.channel,
            where.reply_thread,
            workspace=where.workspace,
            pacer=self._pacer,
            observer=self._manager.metrics.observer(PLATFORM),
            recipient_user=user,
            recipient_team=team,
            native=self._config.native_streaming,
            lang=lang,
        )

    async def _notify(self, target: ReplyTarget, text: str) -> None:
        try:
            await deliver_text(target, text)
        except PlatformError as exc:
            log.warning("slack=notice_failed reason=%s", exc)

    async def on_uninstalled(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        """The single-workspace token stopped working: say so in the log (OAuth installs are removed by Bolt)."""
        log.warning(
            "slack=%s team=%s: the single-workspace token no longer works; reinstall the app",
            event.get("type"),
            context.team_id,
        )

    # Slash command and buttons.

    async def on_command(
        self, ack: Callable[..., Awaitable[None]], command: dict[str, Any], respond: Any, context: AsyncBoltContext
    ) -> None:
        await self._received(lambda settle: self._command(command, respond, context, settle))
        await ack()

    async def _command(
        self, command: Mapping[str, Any], respond: Any, context: AsyncBoltContext, settle: Settle
    ) -> None:
        workspace = self._workspace(context)
        channel = str(command.get("channel_id") or "")
        user_id = str(command.get("user_id") or "")
        text = plain_text(str(command.get("text") or ""), "")
        user = UserRef(
            user_id,
            str(command.get("user_name") or ""),
            verified_admin=await self._installed_by(workspace, user_id, context),
        )
        private = channel.startswith("D")
        commands = self._manager.commands
        parsed = slash_command(text, frozenset(spec.name for spec in commands.visible_to(Asker(is_admin=True))))
        if parsed is None and (word := mistyped_word(text)):
            # `/kb jbos` is no question to post in the channel: the command it resembles is told privately.
            asker = Asker(self._manager.policy.is_admin(PLATFORM, user), private, style=self._style)
            parsed = Command(word) if commands.suggest(word, asker) else None
        if parsed is not None:
            where = Place(workspace, channel, "", private)
            message = await self._in_latest_thread(
                IncomingMessage(
                    key=conversation_key(where),
                    message_id="",
                    user=user,
                    text=text,
                    command=parsed,
                    private=private,
                    style=self._style,
                )
            )
            settle(None)  # a command stores no question, and may run for minutes
            await self._manager.handle(message, ResponseTarget(respond))
            return
        await self._ask(command, respond, context, Place(workspace, channel, "", private), user, text, settle)

    async def _in_latest_thread(self, message: IncomingMessage) -> IncomingMessage:
        """A conversation command (`/kb stop`) sent in a channel acts on the thread the person last asked in there:
        Slack sends a slash command from no thread (it cannot be used in one), so that thread is the one they mean.
        In a DM the DM itself is the conversation."""
        command = message.command
        if message.private or command is None or command.name not in CONVERSATION_COMMANDS:
            return message
        thread = await self._manager.threads.latest(message.key, message.user.id)
        if not thread:
            return message
        return replace(message, key=replace(message.key, thread=thread), latest_conversation=True)

    async def _ask(
        self,
        command: Mapping[str, Any],
        respond: Any,
        context: AsyncBoltContext,
        where: Place,
        user: UserRef,
        text: str,
        settle: Settle,
    ) -> None:
        """A question asked with the slash command: posted in the channel and answered in its thread (in a DM, under
        it in the DM itself)."""
        client = context.client
        assert client is not None
        lang = await self._manager.language(conversation_key(where), text)
        try:
            posted = await call(
                client.chat_postMessage(channel=where.channel, text=slack_words.asked(user.id, text, lang))
            )
        except DeliveryFailed as exc:
            notice = unreachable_notice(str(exc), lang) or slack_words.not_in_channel(lang)
            await self._notify(ResponseTarget(respond), notice)
            return
        except PlatformError as exc:
            log.warning("slack=question_not_posted reason=%s", exc)
            await self._notify(ResponseTarget(respond), messages.turn_failed(lang))
            return
        thread = str(posted["ts"])
        where = Place(where.workspace, where.channel, "" if where.private else thread, where.private)
        message = IncomingMessage(
            key=conversation_key(where),
            message_id=thread,
            user=user,
            text=text,
            private=where.private,
            style=self._style,
            raw=command,
        )
        target = self.target(client, where, user.id, str(command.get("team_id") or context.team_id or ""), lang)
        await self._manager.handle(message, target, on_accepted=settle)

    async def on_feedback(
        self,
        ack: Callable[..., Awaitable[None]],
        body: dict[str, Any],
        action: dict[str, Any],
        respond: Any,
        context: AsyncBoltContext,
    ) -> None:
        """A press on 👍 / 👎: recorded, and the answer shows the choice in place of its buttons."""
        await ack()
        self._spawn(self._feedback(body, action, respond, context))  # Slack hears the ack when this returns

    async def _feedback(
        self, body: Mapping[str, Any], action: Mapping[str, Any], respond: Any, context: AsyncBoltContext
    ) -> None:
        parsed = parse_feedback(str(action.get("value") or ""))
        message = body.get("message") or {}
        channel, key = await pressed_under(self._manager, body, self._workspace(context))
        user = str((body.get("user") or {}).get("id") or "")
        stored = (
            await self._manager.feedback(key, parsed[1], parsed[0], by=user) if parsed is not None and channel else None
        )
        lang = await self._manager.language(key, stored.text if stored is not None else str(message.get("text") or ""))
        if parsed is not None and stored is not None and context.client is not None:
            choice = messages.feedback_thanks(parsed[0], lang)
            after = [ask_why_block(stored.id, lang)] if parsed[0] == "down" else []
            if await _show_choice(context.client, channel, message, stored.text, choice, after):
                return
        try:
            await respond(
                text=messages.feedback_thanks(parsed[0], lang) if parsed and stored else messages.feedback_gone(lang),
                response_type="ephemeral",
                replace_original=False,
            )
        except Exception as exc:  # a lost "thanks" must not look like a failed turn
            log.warning("slack=feedback_ack_failed reason=%r", exc)

    # Helpers.

    def _workspace(self, context: AsyncBoltContext) -> str:
        return workspace_id(context.team_id, context.enterprise_id)

    async def _installed_by(self, workspace: str, user_id: str, context: AsyncBoltContext) -> bool:
        """Whether `user_id` installed the app in this workspace (an admin there without being listed)."""
        if self._installations is None or not user_id:
            return False
        cached = self._installers.get(workspace)
        if cached is None or self._clock() - cached[0] > _INSTALLER_TTL:
            found = await self._installations.async_find_installation(
                enterprise_id=context.enterprise_id, team_id=context.team_id
            )
            installer = found.user_id if found is not None else ""
            cached = self._installers[workspace] = (self._clock(), installer or "")
        return bool(cached[1]) and cached[1] == user_id

    async def _received(self, work: Callable[[Settle], Awaitable[None]]) -> None:
        """Run `work` past this listener, and return once it settled (stored its question, or has none to store) or
        ended, at most _ACK_WITHIN seconds: Bolt tells Slack "received" when the listener returns
        (process_before_response), so a process killed after that has the question in the database."""
        settled = asyncio.Event()
        task = self._spawn(work(lambda _: settled.set()))
        waiter = asyncio.ensure_future(settled.wait())
        try:
            await asyncio.wait({task, waiter}, timeout=_ACK_WITHIN, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if not settled.is_set() and not task.done():
            log.warning("slack=receipt_unsettled within=%.0fs", _ACK_WITHIN)

    def _spawn(self, work: Awaitable[None]) -> asyncio.Task[None]:
        """`work` as a task of its own, kept in `work` until it ends, so stopping can let it finish."""
        task = asyncio.ensure_future(work)
        self.work.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[None]) -> None:
        self.work.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            log.error("slack=listener_failed reason=%s", error, exc_info=error)


def _said(message: IncomingMessage) -> str:
    """The words a message's language is told by, as the turn tells it: a command's arguments, else its text."""
    return message.command.raw if message.command is not None else message.text


async def _show_choice(
    client: AsyncWebClient,
    channel: str,
    message: Mapping[str, Any],
    answer: str,
    choice: str,
    after: Sequence[Block] = (),
) -> bool:
    """Rewrite a rated answer with the choice in place of its buttons; False when it cannot be (then say it aside).

    A natively streamed answer keeps its text outside its blocks, so its stored text is written back with them.
    """
    ts = str(message.get("ts") or "")
    blocks = [dict(block) for block in message.get("blocks") or () if isinstance(block, Mapping)]
    if not ts or not any(is_feedback_block(block) for block in blocks):
        return False
    shown = with_choice(blocks, choice, after)
    if not shows_text(shown):
        if len(answer) > MAX_MARKDOWN:
            return False  # the answer ran over several messages: this one showed only its end
        shown = [markdown_block(answer), *shown]
    try:
        await call(client.chat_update(channel=channel, ts=ts, blocks=shown, text=fallback_text(answer)))
    except PlatformError as exc:
        log.warning("slack=feedback_choice_not_shown reason=%s", exc)
        return False
    return True
