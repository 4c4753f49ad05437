"""FakeSlackAPI, a local Slack Web API for slack_sdk and slack-bolt, the records its tests read, and `events`."""

from fakes.slack import events
from fakes.slack.agent import Prompts
from fakes.slack.content import blocks_text
from fakes.slack.files import LOGIN_PAGE
from fakes.slack.limits import DEFAULT_LIMITS, Limit
from fakes.slack.records import Ephemeral, ResponsePost, Shown, SlackCall, Throttle, Workspace
from fakes.slack.server import FakeSlackAPI

__all__ = [
    "DEFAULT_LIMITS",
    "LOGIN_PAGE",
    "Ephemeral",
    "FakeSlackAPI",
    "Limit",
    "Prompts",
    "ResponsePost",
    "Shown",
    "SlackCall",
    "Throttle",
    "Workspace",
    "blocks_text",
    "events",
]
