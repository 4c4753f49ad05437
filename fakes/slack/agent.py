"""The Web API methods of Slack's agent view and App Home: thread titles, suggested prompts, views.publish."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fakes.base import Json
from fakes.slack.state import SlackState
from fakes.slack.wire import Ctx, SlackError, json_list, opt

# "Use this method to set up to four suggested prompts" (assistant.threads.setSuggestedPrompts docs).
MAX_PROMPTS = 4
# Slack documents no length for a prompt or a thread title. The fake refuses past these, ragbot's own caps
# (adapters.slack.agent), so a test shows ragbot never sends more; a real refusal would read invalid_arguments.
MAX_PROMPT_TITLE = 60
MAX_PROMPT_MESSAGE = 300
MAX_THREAD_TITLE = 60
# Block Kit: "up to 100 blocks in modals or Home tabs"; a header's plain_text is at most 150 characters.
MAX_VIEW_BLOCKS = 100
MAX_HEADER_TEXT = 150
MAX_SECTION_TEXT = 3_000


@dataclass(frozen=True, slots=True)
class Prompts:
    """Suggested prompts as a person sees them above the composer: where, their heading, (title, message) pairs."""

    channel: str
    thread_ts: str | None
    title: str | None
    prompts: tuple[tuple[str, str], ...]


class AgentMethods(SlackState):
    """FakeSlackAPI's agent-view and App Home methods; a workspace set without the agent view refuses the former."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._titles: dict[tuple[str, str], str] = {}
        self._prompts: dict[tuple[str, str | None], Prompts] = {}
        self._home: dict[str, Json] = {}
        self._no_agent_view: set[str] = set()

    # --- Setting the scene ------------------------------------------------------------------------------------------

    def set_agent_view(self, team_id: str, available: bool) -> None:
        """Whether the workspace's plan has the agent view; without it titles and prompts are refused (not_allowed)."""
        if available:
            self._no_agent_view.discard(team_id)
        else:
            self._no_agent_view.add(team_id)

    # --- Looking ----------------------------------------------------------------------------------------------------

    def thread_title(self, channel: str, thread_ts: str) -> str:
        """A thread's title in the agent view ("" when none was set)."""
        return self._titles.get((channel, thread_ts), "")

    def suggested_prompts(self, channel: str, thread_ts: str | None = None) -> Prompts | None:
        """The prompts shown in a DM (thread_ts None: above the agent view's composer), or None."""
        return self._prompts.get((channel, thread_ts))

    def home_view(self, user: str) -> Json | None:
        """The App Home tab a person sees (the view last published for them), or None."""
        return self._home.get(user)

    # --- Methods ----------------------------------------------------------------------------------------------------

    def _agent_view(self, ctx: Ctx) -> None:
        if ctx.bot.team_id in self._no_agent_view:
            raise SlackError("not_allowed")

    async def _set_title(self, ctx: Ctx) -> Json:
        self._agent_view(ctx)
        channel = self._writable(ctx, key="channel_id")
        thread_ts, title = opt(ctx.params, "thread_ts"), opt(ctx.params, "title")
        if not thread_ts or title is None:
            raise SlackError("invalid_arguments")
        if not title.strip() or len(title) > MAX_THREAD_TITLE:
            raise SlackError("invalid_arguments")
        if not self._thread(channel, thread_ts):
            raise SlackError("invalid_thread_ts")
        self._titles[(channel, thread_ts)] = title
        return {}

    async def _set_prompts(self, ctx: Ctx) -> Json:
        self._agent_view(ctx)
        channel = self._writable(ctx, key="channel_id")
        given = json_list(ctx.params.get("prompts"), "invalid_arguments")
        if not given or len(given) > MAX_PROMPTS:
            raise SlackError("invalid_arguments")
        prompts = tuple(_prompt(item) for item in given)
        thread_ts = opt(ctx.params, "thread_ts")
        if thread_ts is not None and not self._thread(channel, thread_ts):
            raise SlackError("invalid_thread_ts")
        self._prompts[(channel, thread_ts)] = Prompts(channel, thread_ts, opt(ctx.params, "title"), prompts)
        return {}

    async def _publish(self, ctx: Ctx) -> Json:
        user = opt(ctx.params, "user_id")
        view = ctx.params.get("view")
        if isinstance(view, str):  # a form body carries the view as JSON text
            try:
                view = json.loads(view)
            except ValueError as exc:
                raise SlackError("invalid_arguments") from exc
        if not user or not isinstance(view, dict):
            raise SlackError("invalid_arguments")
        if view.get("type") != "home":
            raise SlackError("invalid_arguments")
        blocks = view.get("blocks")
        if not isinstance(blocks, list) or len(blocks) > MAX_VIEW_BLOCKS:
            raise SlackError("invalid_blocks")
        for block in blocks:
            _check_view_block(block)
        self._home[user] = view
        return {"view": {"id": f"V{len(self._home):08d}", "type": "home", "blocks": blocks}}


def _prompt(item: Json) -> tuple[str, str]:
    title, message = item.get("title"), item.get("message")
    if not isinstance(title, str) or not isinstance(message, str) or not title.strip() or not message.strip():
        raise SlackError("invalid_arguments")
    if len(title) > MAX_PROMPT_TITLE or len(message) > MAX_PROMPT_MESSAGE:
        raise SlackError("invalid_arguments")
    return title, message


def _check_view_block(block: Any) -> None:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise SlackError("invalid_blocks")
    text = block.get("text")
    shown = str(text.get("text", "")) if isinstance(text, dict) else ""
    if block["type"] == "header" and (not isinstance(text, dict) or text.get("type") != "plain_text"):
        raise SlackError("invalid_blocks")
    limit = MAX_HEADER_TEXT if block["type"] == "header" else MAX_SECTION_TEXT
    if len(shown) > limit:
        raise SlackError("invalid_blocks")
