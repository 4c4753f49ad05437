"""views.open: a modal opened with a click's trigger_id, checked against Slack's modal limits, and recorded."""

from __future__ import annotations

import json
from typing import Any, Final

from fakes.base import Json
from fakes.slack.state import SlackState
from fakes.slack.wire import Ctx, SlackError

# Slack's limits on a modal (Block Kit reference, "Modal views"): title, submit and close at most 24 characters,
# at most 100 blocks, callback_id 255 characters, private_metadata 3,000; a plain_text_input's max_length ≤ 3,000.
MAX_TITLE: Final = 24
MAX_VIEW_BLOCKS: Final = 100
MAX_CALLBACK_ID: Final = 255
MAX_METADATA: Final = 3_000
MAX_INPUT: Final = 3_000


class ViewMethods(SlackState):
    """FakeSlackAPI's views.open: each trigger_id opens one modal (Slack exchanges it once)."""

    async def _views_open(self, ctx: Ctx) -> Json:
        trigger = str(ctx.params.get("trigger_id") or "")
        if not trigger:
            raise SlackError("invalid_arguments")
        if trigger in self._triggers:
            raise SlackError("trigger_exchanged")
        view = ctx.params.get("view")
        if isinstance(view, str):
            try:
                view = json.loads(view)
            except ValueError as exc:
                raise SlackError("invalid_arguments") from exc
        if not isinstance(view, dict):
            raise SlackError("invalid_arguments")
        _check_modal(view)
        self._triggers.add(trigger)
        opened = {**view, "id": f"V{len(self.views_opened) + 1:08d}", "trigger_id": trigger}
        self.views_opened.append(opened)
        return {"view": opened}


def _check_modal(view: dict[str, Any]) -> None:
    if view.get("type") != "modal":
        raise SlackError("invalid_arguments")
    for part in ("title", "submit", "close"):
        text = (view.get(part) or {}).get("text", "")
        if (part == "title" and not text) or len(str(text)) > MAX_TITLE:
            raise SlackError("invalid_arguments")
    blocks = view.get("blocks")
    if not isinstance(blocks, list) or not blocks or len(blocks) > MAX_VIEW_BLOCKS:
        raise SlackError("invalid_arguments")
    if len(str(view.get("callback_id") or "")) > MAX_CALLBACK_ID:
        raise SlackError("invalid_arguments")
    if len(str(view.get("private_metadata") or "")) > MAX_METADATA:
        raise SlackError("invalid_arguments")
    for block in blocks:
        element = block.get("element") or {}
        if element.get("type") == "plain_text_input" and int(element.get("max_length") or 0) > MAX_INPUT:
            raise SlackError("invalid_arguments")
