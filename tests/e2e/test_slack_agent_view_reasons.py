"""A reason for a 👎 on an answer in an agent-view DM thread (a conversation of its own) is that thread's."""

from __future__ import annotations

import json

from bot.words import messages
from tests.e2e.test_slack import BOB, TEAM, Slack, _press
from tests.e2e.test_slack_agent_view import _dm, _stored, slack
from tests.e2e.test_slack_feedback_reasons import _open_modal, _submit

__all__ = ["slack"]  # the agent view's Slack world, as test_slack_agent_view builds it


async def test_a_reason_in_a_dm_thread_kept_apart_is_stored_with_that_threads_answer(slack: Slack) -> None:
    thread = await _dm(slack, "D0WHYAPART", "How do I install the VPN client?")
    await slack.answers("D0WHYAPART", thread)
    (answer,) = await _stored(slack, ("slack", TEAM, "D0WHYAPART", thread))
    reply = slack.bot_replies("D0WHYAPART", thread)[0]
    await _press(slack, "D0WHYAPART", reply, f"down:{answer.id}")
    await slack.fake.wait_for(lambda: slack.fake.message("D0WHYAPART", reply.ts).edits > reply.edits, timeout=10)

    view = await _open_modal(slack, "D0WHYAPART", slack.fake.message("D0WHYAPART", reply.ts), answer.id)
    assert json.loads(view["private_metadata"])["t"] == thread
    assert await _submit(slack, view, BOB, "not_found") == {}
    assert (await slack.services.conversations.message(answer.id)).feedback_reason == "not_found"
    noted = messages.feedback_noted("not_found", "en")
    await slack.fake.wait_for(lambda: [e.text for e in slack.fake.ephemeral("D0WHYAPART")] == [noted], timeout=10)
    assert slack.fake.ephemeral("D0WHYAPART")[0].thread_ts == thread
