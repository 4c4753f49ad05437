"""FakeSlackAPI, a local Slack Web API for slack_sdk and slack-bolt, the records its tests read, and `events`."""

from fakes.slack import events
from fakes.slack.server import (
    DEFAULT_LIMITS,
    LOGIN_PAGE,
    Ephemeral,
    FakeSlackAPI,
    Limit,
    ResponsePost,
    Shown,
    SlackCall,
    Throttle,
    Workspace,
    blocks_text,
)

__all__ = [
    "DEFAULT_LIMITS",
    "LOGIN_PAGE",
    "Ephemeral",
    "FakeSlackAPI",
    "Limit",
    "ResponsePost",
    "Shown",
    "SlackCall",
    "Throttle",
    "Workspace",
    "blocks_text",
    "events",
]
