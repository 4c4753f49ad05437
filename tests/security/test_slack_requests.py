"""Drill: forged, stale and replayed Slack requests on every route ragbot serves (events, slash commands,
interactivity) are refused or dropped, and nothing they ask for happens."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

import pytest
import pytest_asyncio

from adapters.slack.render import FEEDBACK_ACTION
from fakes.slack import events
from tests.conftest import EmbeddedSettings
from tests.e2e.test_slack import BOB, SECRET, TEAM, Slack
from tests.security.slack_support import deliver, settled, slack_scene

HANDBOOK = b"# Lunch\n\nLunch is served from noon in the atrium on the second floor.\n"
FORM = "application/x-www-form-urlencoded"


@pytest_asyncio.fixture(scope="module")
async def slack(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[Slack]:
    data_dir = tmp_path_factory.mktemp("slack-requests")
    async with slack_scene(data_dir, embedded_settings, {"handbook.md": HANDBOOK}) as scene:
        yield scene


def _command(slack: Slack, channel: str) -> tuple[bytes, str, str]:
    """A `/kb list` by a member: its body, content type and response_url (where its one reply lands)."""
    hook = slack.fake.response_url(team_id=TEAM, channel=channel, user=BOB)
    fields = events.slash_command(
        command="/kb", text="list", user_id=BOB, channel_id=channel, team_id=TEAM, response_url=hook
    )
    return events.form_body(fields), FORM, hook


def _click(slack: Slack, channel: str) -> tuple[bytes, str, str]:
    """A press on a feedback button of an answer ragbot no longer has: its one reply lands on the response_url."""
    hook = slack.fake.response_url(team_id=TEAM, channel=channel, user=BOB)
    payload = events.block_actions(
        action_id=FEEDBACK_ACTION,
        value="up:no-such-answer",
        user=BOB,
        team_id=TEAM,
        channel=channel,
        message_ts="1700000000.000100",
        response_url=hook,
    )
    return events.interactive_body(payload), FORM, hook


Route = Callable[[Slack, str], tuple[bytes, str, str]]
ROUTES = {"slash-command": _command, "interactivity": _click}


@pytest.mark.parametrize("route", ROUTES.values(), ids=ROUTES.keys())
async def test_a_replayed_signed_request_is_not_handled_twice(slack: Slack, route: Route) -> None:
    body, content_type, hook = route(slack, f"C0REPLAY{len(slack.fake.calls())}")
    headers = events.signed_headers(body, SECRET, content_type=content_type)
    assert await deliver(slack, body, headers) == 200
    await slack.fake.wait_for(lambda: slack.fake.responses(hook), timeout=30)
    assert await deliver(slack, body, headers) == 200  # acknowledged, so Slack would not retry it
    await settled(slack)
    assert len(slack.fake.responses(hook)) == 1


@pytest.mark.parametrize("route", ROUTES.values(), ids=ROUTES.keys())
@pytest.mark.parametrize(
    ("secret", "age"), [("not-the-secret", 0), (SECRET, 301), (SECRET, -400)], ids=["forged", "stale", "future"]
)
async def test_a_forged_or_stale_request_is_refused(slack: Slack, route: Route, secret: str, age: int) -> None:
    body, content_type, hook = route(slack, "C0FORGED")
    headers = events.signed_headers(body, secret, int(time.time()) - age, content_type=content_type)
    assert await deliver(slack, body, headers) == 401
    await settled(slack)
    assert slack.fake.responses(hook) == []


@pytest.mark.parametrize(("secret", "age"), [("not-the-secret", 0), (SECRET, 301)], ids=["forged", "stale"])
async def test_a_forged_or_stale_event_is_refused_and_not_answered(slack: Slack, secret: str, age: int) -> None:
    channel = f"C0EVENT{age}"
    ts = slack.fake.user_message(TEAM, channel, BOB, f"<@{events.BOT_USER_ID}> When is lunch served?")
    event = events.app_mention(channel=channel, user=BOB, text="When is lunch served?", team=TEAM, ts=ts)
    body = events.json_body(events.envelope(event, team_id=TEAM))
    assert await deliver(slack, body, events.signed_headers(body, secret, int(time.time()) - age)) == 401
    await settled(slack)
    assert slack.bot_replies(channel, ts) == []


async def test_a_replayed_event_is_answered_once(slack: Slack) -> None:
    channel = "C0EVREPLAY"
    ts = slack.fake.user_message(TEAM, channel, BOB, f"<@{events.BOT_USER_ID}> When is lunch served?")
    event = events.app_mention(channel=channel, user=BOB, text="When is lunch served?", team=TEAM, ts=ts)
    body = events.json_body(events.envelope(event, team_id=TEAM))
    headers = events.signed_headers(body, SECRET)
    assert await deliver(slack, body, headers) == 200
    await slack.answers(channel, ts)
    assert await deliver(slack, body, headers) == 200
    await settled(slack)
    assert len(slack.bot_replies(channel, ts)) == 1
