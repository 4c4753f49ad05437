"""Why a 👎 in Slack: the "Tell us why" button, the modal it opens (views.open) and its submission, through the real
slack-bolt and slack_sdk against the fake Web API."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from adapters.slack.app import EVENTS_PATH
from adapters.slack.reasons import REASON_ACTION, REASON_VIEW
from bot.chat.feedback import NOTE_MAX, REASONS
from bot.types import ConversationKey
from bot.words import messages
from fakes.slack import Shown, events
from tests.e2e.test_slack import BOB, SECRET, TEAM, Slack, _last_answer, _press, slack

__all__ = ["slack"]  # the module's Slack world, shared with test_slack's fixture

ALICE = "U0ALICE"


async def _submit(slack: Slack, view: dict[str, Any], user: str, reason: str | None, note: str = "") -> dict[str, Any]:
    """Send the modal as Slack does when a person presses Send; Bolt's answer as JSON ({} when it just closes)."""
    values: dict[str, Any] = {
        "reason": {"choice": {"type": "radio_buttons", "selected_option": None}},
        "note": {"text": {"type": "plain_text_input", "value": note or None}},
    }
    if reason is not None:
        option = {"text": {"type": "plain_text", "text": reason}, "value": reason}
        values["reason"]["choice"]["selected_option"] = option
    body = events.interactive_body(events.view_submission(view=view, user=user, team_id=TEAM, values=values))
    headers = events.signed_headers(body, SECRET, content_type="application/x-www-form-urlencoded")
    async with (
        aiohttp.ClientSession() as session,
        session.post(slack.url + EVENTS_PATH, data=body, headers=headers) as response,
    ):
        assert response.status == 200
        text = await response.text()
    return json.loads(text) if text else {}


async def _rated_down(slack: Slack, channel: str) -> tuple[Any, Shown]:
    """A question answered in a thread of `channel`, its answer given a 👎 by Bob; (stored answer, rated message)."""
    thread = await slack.mention("How do I install the VPN client?", channel=channel)
    await slack.answers(channel, thread)
    reply = slack.bot_replies(channel, thread)[0]
    answer = await _last_answer(slack.services, ("slack", TEAM, channel, thread))
    await _press(slack, channel, reply, f"down:{answer.id}")
    await slack.fake.wait_for(lambda: slack.fake.message(channel, reply.ts).edits > reply.edits, timeout=10)
    return answer, slack.fake.message(channel, reply.ts)


async def _open_modal(slack: Slack, channel: str, rated: Shown, answer_id: str, user: str = BOB) -> dict[str, Any]:
    opened = len(slack.fake.views_opened)
    message = {"type": "message", "ts": rated.ts, "thread_ts": rated.thread_ts, "text": rated.text}
    click = events.block_actions(
        action_id=REASON_ACTION,
        value=answer_id,
        user=user,
        team_id=TEAM,
        channel=channel,
        message_ts=rated.ts,
        response_url=slack.fake.response_url(team_id=TEAM, channel=channel, user=user),
        message={**message, "blocks": rated.blocks},
        block_id="ragbot_why",
    )
    status, _ = await slack.post(click)
    assert status == 200
    await slack.fake.wait_for(lambda: len(slack.fake.views_opened) > opened, timeout=10)
    view = slack.fake.views_opened[-1]
    assert view["trigger_id"] == click["trigger_id"]
    return view


async def test_a_thumbs_down_offers_tell_us_why_whose_modal_stores_the_reason_with_the_answer(slack: Slack) -> None:
    answer, rated = await _rated_down(slack, "C0WHY")
    (why,) = [block for block in rated.blocks if block["type"] == "actions"]
    (button,) = why["elements"]
    assert (button["action_id"], button["value"]) == (REASON_ACTION, answer.id)
    assert button["text"]["text"] == messages.feedback_ask_why("en")
    assert rated.text.endswith(messages.feedback_thanks("down", "en"))

    view = await _open_modal(slack, "C0WHY", rated, answer.id)
    assert view["callback_id"] == REASON_VIEW
    reason_block, note_block = view["blocks"]
    assert [option["value"] for option in reason_block["element"]["options"]] == list(REASONS)
    assert (note_block["optional"], note_block["element"]["max_length"]) == (True, NOTE_MAX)

    assert await _submit(slack, view, BOB, "outdated", "The client moved to the new portal.") == {}
    noted = messages.feedback_noted("outdated", "en")
    await slack.fake.wait_for(lambda: [e.text for e in slack.fake.ephemeral("C0WHY") if e.user == BOB] == [noted])
    (confirmation,) = slack.fake.ephemeral("C0WHY")
    assert confirmation.thread_ts == rated.thread_ts
    stored = await slack.services.conversations.message(answer.id)
    assert (stored.feedback, stored.feedback_reason, stored.feedback_note, stored.feedback_by) == (
        "down",
        "outdated",
        "The client moved to the new portal.",
        BOB,
    )
    # Sent twice (a double click on Send): one reason, the same.
    assert await _submit(slack, view, BOB, "outdated", "The client moved to the new portal.") == {}
    assert (await slack.services.conversations.message(answer.id)).feedback_reason == "outdated"


async def test_the_modal_refuses_another_persons_reason_a_long_note_and_no_choice_in_place(slack: Slack) -> None:
    answer, rated = await _rated_down(slack, "C0WHYNOT")
    view = await _open_modal(slack, "C0WHYNOT", rated, answer.id, user=ALICE)
    refused = await _submit(slack, view, ALICE, "wrong")
    assert refused == {
        "response_action": "errors",
        "errors": {"reason": messages.feedback_reason_refused("not_rater", "en")},
    }
    too_long = await _submit(slack, view, BOB, "other", "x" * (NOTE_MAX + 1))
    assert too_long["errors"] == {"note": messages.feedback_reason_refused("too_long", "en", NOTE_MAX)}
    unpicked = await _submit(slack, view, BOB, None)
    assert unpicked["errors"] == {"reason": messages.feedback_reason_refused("unknown", "en")}
    stored = await slack.services.conversations.message(answer.id)
    assert (stored.feedback_reason, stored.feedback_note) == ("", "")


async def test_a_reason_for_an_answer_changed_to_thumbs_up_is_refused(slack: Slack) -> None:
    answer, rated = await _rated_down(slack, "C0WHYUP")
    view = await _open_modal(slack, "C0WHYUP", rated, answer.id)
    # Bob changes his mind on another device while the modal is open.
    key = ConversationKey("slack", TEAM, "C0WHYUP", rated.thread_ts or "")
    assert await slack.manager.feedback(key, answer.id, "up", by=BOB) is not None
    refused = await _submit(slack, view, BOB, "wrong")
    assert refused["errors"] == {"reason": messages.feedback_reason_refused("not_down", "en")}
    assert (await slack.services.conversations.message(answer.id)).feedback_reason == ""
