"""What ragbot does when a person opens its DM or its Home tab, and with the channel they are viewing.

Opening the DM (app_home_opened, tab "messages", in the agent view; assistant_thread_started in the legacy
assistant view) shows the most asked questions of the knowledge bases the DM reads as suggested prompts. Opening
the Home tab publishes how to ask, those knowledge bases and the commands. Each call is optional: a workspace
without the feature refuses it once, and is left alone (adapters.slack.agent.OptionalCalls).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import words as slack_words
from adapters.slack.agent import MAX_PROMPTS, OptionalCalls, prompts_of, set_prompts, set_title
from adapters.slack.home import home_view
from adapters.slack.translate import PLATFORM, Place, conversation_key, workspace_id
from adapters.slack.viewing import ViewedChannels, thread_context, viewed_channel
from bot.chat.manager import ConversationManager
from bot.chat.popular import PopularQuestions
from bot.commands.registry import Asker
from bot.types import CommandStyle, ConversationKey, UserRef

log = logging.getLogger(__name__)

Spawn = Callable[[Awaitable[None]], object]
"""Runs work past the listener (SlackListeners._spawn), so Slack hears the event arrived at once."""
InstalledBy = Callable[[str, str, AsyncBoltContext], Awaitable[bool]]
"""Whether a person installed the app in a workspace (SlackListeners._installed_by)."""


class AgentViewListeners:
    """Bolt's listeners for the DM being opened, the Home tab, and assistant threads' context."""

    def __init__(
        self,
        manager: ConversationManager,
        popular: PopularQuestions,
        style: CommandStyle,
        *,
        spawn: Spawn,
        installed_by: InstalledBy,
    ) -> None:
        self._manager = manager
        self._popular = popular
        self._style = style
        self._spawn = spawn
        self._installed_by = installed_by
        self.calls = OptionalCalls()
        self.threads = ViewedChannels()

    async def on_home_opened(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        """The person opened the DM (tab "messages": the agent view's prompts) or the Home tab (published)."""
        client, user, channel = context.client, str(event.get("user") or ""), str(event.get("channel") or "")
        if client is None or not user or not channel.startswith("D"):
            return
        workspace = workspace_id(context.team_id, context.enterprise_id)
        dm = Place(workspace, channel, "", private=True)
        if event.get("tab") == "home":
            self._spawn(self._publish_home(client, workspace, dm, user, context))
        elif event.get("tab") == "messages":
            self._spawn(self._suggest(client, dm, thread_ts=None))

    async def on_thread_started(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        """The legacy assistant view opened a thread: its prompts, and the channel viewed beside it."""
        channel, thread_ts, viewed = thread_context(event)
        if context.client is None or not channel.startswith("D") or not thread_ts:
            return
        self.threads.remember(channel, thread_ts, viewed)
        workspace = workspace_id(context.team_id, context.enterprise_id)
        where = Place(workspace, channel, thread_ts, private=True, apart=True)
        self._spawn(self._suggest(context.client, where, thread_ts=thread_ts))

    async def on_context_changed(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        """The person moved to another channel while a legacy assistant thread was open."""
        channel, thread_ts, viewed = thread_context(event)
        if channel and thread_ts:
            self.threads.remember(channel, thread_ts, viewed)

    async def name_thread(self, client: AsyncWebClient, where: Place, question: str) -> None:
        """Title a DM thread kept apart after its first question (called before the question is stored)."""
        if not where.apart or not where.reply_thread or not question.strip():
            return
        if await self._manager.known(conversation_key(where)):
            return  # named when its first question came
        self._spawn(self._title(client, where, question))

    async def _title(self, client: AsyncWebClient, where: Place, question: str) -> None:
        await set_title(self.calls, client, where.workspace, where.channel, where.reply_thread, question)

    async def focus(self, where: Place, viewed: str) -> list[str] | None:
        """The knowledge bases a DM question reads while the person views `viewed`: those of the DM's that the
        channel reads too, when that narrows them; None (the DM's own) otherwise."""
        if not viewed or not where.private:
            return None
        mine = await self._manager.readable_kb_ids(conversation_key(where))
        theirs = set(await self._manager.readable_kb_ids(ConversationKey(PLATFORM, where.workspace, viewed)))
        focused = [kb_id for kb_id in mine if kb_id in theirs]
        if focused and len(focused) < len(mine):
            log.info("slack=context_focus viewed=%s kbs=%d of=%d", viewed, len(focused), len(mine))
            return focused
        return None

    async def _suggest(self, client: AsyncWebClient, where: Place, *, thread_ts: str | None) -> None:
        dm = ConversationKey(PLATFORM, where.workspace, where.channel)
        if self.calls.refused(where.workspace, "assistant.threads.setSuggestedPrompts"):
            return
        questions = await self._popular.of(await self._manager.readable_kb_ids(dm), MAX_PROMPTS)
        if not questions:
            return  # no FAQs to suggest: Slack keeps whatever the app's manifest suggests
        lang = await self._manager.language(dm)
        heading = slack_words.prompts_heading(lang)
        await set_prompts(
            self.calls, client, where.workspace, where.channel, prompts_of(questions), heading, thread_ts=thread_ts
        )

    async def _publish_home(
        self, client: AsyncWebClient, workspace: str, dm: Place, user: str, context: AsyncBoltContext
    ) -> None:
        key = conversation_key(dm)
        lang = await self._manager.language(key)
        admin = self._manager.policy.is_admin(
            PLATFORM, UserRef(user, verified_admin=await self._installed_by(workspace, user, context))
        )
        help_text = self._manager.commands.help(Asker(is_admin=admin, style=self._style), lang)
        view = home_view(await self._manager.readable_kb_names(key), help_text, lang, self._style)
        await self.calls.make(workspace, "views.publish", lambda: client.views_publish(user_id=user, view=view))


def viewed_in(event: Mapping[str, Any], where: Place, threads: ViewedChannels) -> str:
    """The channel a DM question was asked beside: the agent view's stamp on it, else its assistant thread's."""
    return viewed_channel(event) or (threads.of(where.channel, where.reply_thread) if where.reply_thread else "")
