"""What FakeSlackAPI keeps and records: workspaces, calls, 429s, messages as people read them, and its own stores."""

from __future__ import annotations

from dataclasses import dataclass, field

from fakes.base import Json


@dataclass(frozen=True, slots=True)
class Workspace:
    """One installed workspace: its team and the bot's identity and token."""

    team_id: str
    bot_token: str
    bot_user_id: str
    bot_id: str
    team_name: str = ""
    enterprise_id: str | None = None
    bot_name: str = "ragbot"


@dataclass(frozen=True, slots=True)
class SlackCall:
    """One Web API call as the fake answered it; `transport` says where its params came from."""

    method: str
    team_id: str | None
    params: Json
    transport: str  # "json", "form", "multipart" or "query" (no body: POST or GET with a query string)
    http_method: str
    authorization: str  # "bearer", "basic", "param" or "none"
    error: str | None  # None when the answer was ok
    time: float


@dataclass(frozen=True, slots=True)
class Throttle:
    """One 429 the fake answered: which limit, for how long."""

    method: str
    team_id: str | None
    channel: str | None
    scope: str  # "workspace" (per-method window), "channel" (chat.postMessage bucket) or "scripted"
    retry_after: int
    time: float


@dataclass(frozen=True, slots=True)
class Shown:
    """A message as a person reads it."""

    ts: str
    user: str
    thread_ts: str | None
    text: str
    blocks: list[Json]
    streaming: bool
    edits: int
    bot_id: str | None


@dataclass(frozen=True, slots=True)
class Ephemeral:
    """An ephemeral message: from chat.postEphemeral or a response_url post."""

    channel: str | None
    user: str | None
    text: str
    blocks: list[Json]
    thread_ts: str | None
    via: str


@dataclass(frozen=True, slots=True)
class ResponsePost:
    """One POST to a response_url and the status the fake answered."""

    url: str
    body: Json
    status: int
    time: float


@dataclass(slots=True)
class Stream:
    """A native stream (chat.startStream) of a message: when it began and was last fed, its shape, its state."""

    started: float
    last: float
    mode: str | None  # "markdown_text" or "chunks": a stream keeps the shape of its first content
    state: str = "open"  # open, stopped, expired


@dataclass(slots=True)
class Message:
    """A message as the fake stores it: its content in whichever form it came, its stream, edits and reactions."""

    channel: str
    ts: str
    user: str
    bot_id: str | None = None
    thread_ts: str | None = None
    text: str | None = None
    markdown: str | None = None
    blocks: list[Json] = field(default_factory=list)
    deltas: list[str] | None = None  # a streamed message's text as it arrived; None once chat.update replaced it
    chunks: list[Json] = field(default_factory=list)  # task_update / plan_update chunks of a stream
    stream: Stream | None = None
    edits: int = 0
    edited_ts: str | None = None
    deleted: bool = False
    reactions: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Channel:
    """A channel: the workspace that first used it, and whether the bot is still in it."""

    team_id: str
    bot_member: bool = True


@dataclass(frozen=True, slots=True)
class StoredFile:
    """An uploaded file: its workspace, its Slack file object and its bytes."""

    team_id: str
    info: Json
    content: bytes
    # False: Slack answers its sign-in page even to the bot's token (a file from a workspace it cannot read).
    downloadable: bool = True


@dataclass(slots=True)
class Hook:
    """A response_url handed out: where its posts go, when it was made, how often it was used."""

    team_id: str | None
    channel: str | None
    user: str | None
    message_ts: str | None
    created: float
    uses: int = 0


@dataclass(frozen=True, slots=True)
class OAuthCode:
    """An OAuth code a test registered: the client it belongs to and the oauth.v2.access answer it buys."""

    client_id: str
    client_secret: str
    redirect_uri: str | None
    answer: Json
