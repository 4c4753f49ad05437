"""SQLModel tables; rows never leave storage (repositories return records)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, Index, LargeBinary, UniqueConstraint, false
from sqlmodel import Field, SQLModel


def new_id() -> str:
    """A fresh primary key: a UUID string, also used as the Weaviate object id."""
    return str(uuid.uuid4())


def utcnow() -> datetime:
    """Now, in UTC (sqlmodel stores aware timestamps on both backends)."""
    return datetime.now(UTC)


def _json_column() -> Any:
    return Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


def _json_list_column() -> Any:
    return Field(default_factory=list, sa_column=Column(JSON, nullable=False))


class KnowledgeBase(SQLModel, table=True):
    """A named collection of documents and FAQs with its chunking rule, owned by one tenant."""

    __tablename__ = "knowledge_base"
    # Names are unique per owner: one tenant's "handbook" neither blocks nor reveals another's.
    __table_args__ = (UniqueConstraint("owner", "name"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    name: str = Field(max_length=128, index=True)
    # '' is the operator (the terminal, the web chat, Telegram, a single Slack workspace); "slack:T123" a workspace
    # that installed the app through OAuth.
    owner: str = Field(default="", max_length=128, index=True)
    description: str = Field(default="", max_length=2000)
    chunking: dict[str, Any] = _json_column()
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class KnowledgeBaseGrant(SQLModel, table=True):
    """The operator's permission for a tenant to read a knowledge base it does not own."""

    __tablename__ = "knowledge_base_grant"
    __table_args__ = (UniqueConstraint("kb_id", "tenant"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    kb_id: str = Field(foreign_key="knowledge_base.id", index=True, max_length=36)
    tenant: str = Field(max_length=128, index=True)
    created_at: datetime = Field(default_factory=utcnow)


class KnowledgeBaseTables(SQLModel, table=True):
    """A knowledge base whose spreadsheets' questions may be answered with SQL on their rows (`/tables on`).

    A row of its own, not a column of knowledge_base: a switch that is off by default is its absence.
    """

    __tablename__ = "knowledge_base_tables"

    kb_id: str = Field(foreign_key="knowledge_base.id", primary_key=True, max_length=36)
    created_at: datetime = Field(default_factory=utcnow)


class Document(SQLModel, table=True):
    """One ingested file or URL in a knowledge base."""

    __tablename__ = "document"
    __table_args__ = (UniqueConstraint("kb_id", "source_uri"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    kb_id: str = Field(foreign_key="knowledge_base.id", index=True, max_length=36)
    title: str = Field(default="", max_length=512)
    source_uri: str = Field(max_length=2048)
    mime_type: str = Field(default="", max_length=128)
    content_hash: str = Field(default="", max_length=64, index=True)
    rule_hash: str = Field(default="", max_length=16)
    status: str = Field(default="pending", max_length=16)
    # The version whose segments and chunks are live; rows of any other version are being written or removed.
    version: str = Field(default="", max_length=64)
    text: str = ""
    segment_count: int = 0
    chunk_count: int = 0
    char_count: int = 0
    meta: dict[str, Any] = _json_column()
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class Segment(SQLModel, table=True):
    """A parent chunk: the context handed to the model around matching children."""

    __tablename__ = "segment"
    # A version's rows found without reading the document's others (a replaced version is removed in batches).
    __table_args__ = (Index("ix_segment_document_id_version", "document_id", "version"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    document_id: str = Field(foreign_key="document.id", index=True, max_length=36)
    kb_id: str = Field(index=True, max_length=36)
    position: int
    text: str
    start_offset: int
    end_offset: int
    child_ids: list[str] = _json_list_column()
    meta: dict[str, Any] = _json_column()
    version: str = Field(default="", max_length=64)


class Chunk(SQLModel, table=True):
    """A child chunk: the unit that is embedded and indexed in Weaviate."""

    __tablename__ = "chunk"
    __table_args__ = (Index("ix_chunk_document_id_version", "document_id", "version"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    segment_id: str | None = Field(default=None, foreign_key="segment.id", index=True, max_length=36)
    document_id: str = Field(foreign_key="document.id", index=True, max_length=36)
    kb_id: str = Field(index=True, max_length=36)
    position: int
    text: str
    start_offset: int
    end_offset: int
    content_hash: str = Field(max_length=64)
    token_count: int = 0
    meta: dict[str, Any] = _json_column()
    version: str = Field(default="", max_length=64)


class DocumentSheet(SQLModel, table=True):
    """A sheet of a CSV or spreadsheet document: its rows as JSON, from which each process makes its tables file.

    Written after the version it belongs to went live, and read only while that version is still the document's
    (as chunks are); `digest` is what a tables file compares its copy with.
    """

    __tablename__ = "document_sheet"
    __table_args__ = (UniqueConstraint("document_id", "position"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    document_id: str = Field(foreign_key="document.id", index=True, max_length=36)
    kb_id: str = Field(index=True, max_length=36)
    # Sheets with rows counted from 0 in the file's order: the table's name follows from it.
    position: int
    name: str = ""
    # The header row first; capped at ingestion (rag.ingest's table limits).
    rows: str
    row_count: int = 0
    digest: str = Field(max_length=64)
    version: str = Field(max_length=64)


class IndexWrite(SQLModel, table=True):
    """Chunks being written to the vector index before their SQL commit: what a crash in between leaves behind.

    Written before the upsert and removed once the SQL transaction committed (or the index was cleaned up), so a
    row still here after its owner died names index objects that may have no committed chunk behind them. While it
    lasts and its owner may be running, it also claims its documents: no other writer writes or removes their index
    objects (a delete's note claims its document the same way, with no chunks).
    """

    __tablename__ = "index_write"

    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    # host:pid of the writing process, so a restart on the same host repairs a dead writer's rows at once.
    owner: str = Field(max_length=128)
    chunk_ids: list[str] = _json_list_column()
    # The documents whose index objects the owner writes or removes: while its note lasts, no other owner may.
    document_ids: list[str] = _json_list_column()
    expires_at: datetime
    created_at: datetime = Field(default_factory=utcnow)


class Lease(SQLModel, table=True):
    """A named hold on shared work (the reindex), owned by one process until it expires unless renewed."""

    __tablename__ = "lease"

    name: str = Field(primary_key=True, max_length=64)
    owner: str = Field(max_length=128)
    expires_at: datetime


class Faq(SQLModel, table=True):
    """A curated question with its variants, negative questions and answers."""

    __tablename__ = "faq"
    __table_args__ = (UniqueConstraint("kb_id", "question"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    kb_id: str = Field(foreign_key="knowledge_base.id", index=True, max_length=36)
    question: str = Field(max_length=2000)
    similar_questions: list[str] = _json_list_column()
    negative_questions: list[str] = _json_list_column()
    answers: list[str] = _json_list_column()
    enabled: bool = True
    content_hash: str = Field(default="", max_length=64)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class Conversation(SQLModel, table=True):
    """One chat or thread on one platform."""

    __tablename__ = "conversation"
    __table_args__ = (UniqueConstraint("platform", "workspace", "chat", "thread"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    platform: str = Field(max_length=32)
    workspace: str = Field(default="", max_length=128)
    chat: str = Field(max_length=128)
    thread: str = Field(default="", max_length=128)
    # `/new` sets it: history and the restored transcript start after it.
    reset_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class Message(SQLModel, table=True):
    """One user or assistant message in a conversation."""

    __tablename__ = "message"
    # A person's newest questions first: the conversation a command acts on when it names none.
    __table_args__ = (Index("ix_message_author_created_at", "author", "created_at"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    conversation_id: str = Field(foreign_key="conversation.id", index=True, max_length=36)
    request_id: str = Field(index=True, max_length=64)
    role: str = Field(max_length=16)
    text: str
    status: str = Field(default="done", max_length=16, index=True)
    platform_message_id: str = Field(default="", max_length=128)
    # The ragbot process writing an answer (status `streaming`): when it dies, another finishes the answer.
    instance: str = Field(default="", max_length=64, sa_column_kwargs={"server_default": ""})
    # Who wrote a user message (group chats mix people): the platform's user id.
    author: str = Field(default="", max_length=128)
    # The platform's id of the event that brought a user message; unique, so a retried delivery is seen.
    event_key: str | None = Field(default=None, max_length=300, unique=True, index=True)
    feedback: str = Field(default="", max_length=8)
    # Why an answer got a 👎 (wrong, outdated, not_found, too_long, other), in the words of the person who pressed it.
    feedback_reason: str = Field(default="", max_length=16, sa_column_kwargs={"server_default": ""})
    feedback_note: str = Field(default="", max_length=500, sa_column_kwargs={"server_default": ""})
    # Who pressed 👍/👎 last: only they may say why.
    feedback_by: str = Field(default="", max_length=128, sa_column_kwargs={"server_default": ""})
    meta: dict[str, Any] = _json_column()
    created_at: datetime = Field(default_factory=utcnow, index=True)


class PostedMessage(SQLModel, table=True):
    """A message the bot posted in a conversation, by the platform's id for it: a reply to it continues that
    conversation (a Telegram group keyed by reply chain)."""

    __tablename__ = "posted_message"

    platform: str = Field(primary_key=True, max_length=32)
    workspace: str = Field(primary_key=True, max_length=128)
    chat: str = Field(primary_key=True, max_length=128)
    message_id: str = Field(primary_key=True, max_length=128)
    conversation_id: str = Field(foreign_key="conversation.id", index=True, max_length=36)


class IngestionJob(SQLModel, table=True):
    """A durable ingestion request with its progress."""

    __tablename__ = "ingestion_job"

    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    kb_id: str = Field(foreign_key="knowledge_base.id", index=True, max_length=36)
    kind: str = Field(max_length=16)
    source: str = Field(max_length=2048)
    status: str = Field(default="queued", index=True, max_length=16)
    stage: str = Field(default="", max_length=32)
    done: int = 0
    total: int = 0
    error: str = Field(default="", max_length=2000)
    requested_by: str = Field(default="", max_length=128)
    requested_from: dict[str, Any] = _json_column()
    result: dict[str, Any] = _json_column()
    attempts: int = 0
    created_at: datetime = Field(default_factory=utcnow)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    # The runner holding a queued or running job; it renews the lease while alive, another takes over after.
    lease_owner: str = Field(default="", max_length=128)
    lease_expires_at: datetime | None = None


class ChannelBinding(SQLModel, table=True):
    """Which knowledge bases a chat may read."""

    __tablename__ = "channel_binding"
    __table_args__ = (UniqueConstraint("platform", "workspace", "chat", "kb_id"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    platform: str = Field(max_length=32)
    workspace: str = Field(default="", max_length=128)
    chat: str = Field(max_length=128)
    kb_id: str = Field(foreign_key="knowledge_base.id", index=True, max_length=36)
    created_at: datetime = Field(default_factory=utcnow)


class ChatSetting(SQLModel, table=True):
    """How the bot behaves in one chat: when it answers, what it says when nothing fits, and in which language."""

    __tablename__ = "chat_setting"
    __table_args__ = (UniqueConstraint("platform", "workspace", "chat"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    platform: str = Field(max_length=32)
    workspace: str = Field(default="", max_length=128)
    chat: str = Field(max_length=128)
    answer_mode: str = Field(default="", max_length=16)
    fallback_text: str = Field(default="", max_length=2000)
    # A language code ("en", "zh") the bot replies in here; "" replies in the language of each message.
    language: str = Field(default="", max_length=16)
    # `/web on`: answers here search the web too, when a provider is configured (WEB_SEARCH_PROVIDER).
    web_search: bool = Field(default=False, sa_column_kwargs={"server_default": false()})
    updated_at: datetime = Field(default_factory=utcnow)


class EmbeddingCacheEntry(SQLModel, table=True):
    """A stored embedding keyed by provider, model and content hash."""

    __tablename__ = "embedding_cache"
    __table_args__ = (UniqueConstraint("provider", "model", "content_hash"),)

    id: int | None = Field(default=None, primary_key=True)
    provider: str = Field(max_length=32)
    model: str = Field(max_length=256)
    content_hash: str = Field(max_length=64)
    dimension: int
    vector: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class SlackInstallation(SQLModel, table=True):
    """One Slack app's installation in one workspace, or in a whole org when installed org-wide."""

    __tablename__ = "slack_installation"
    # '' stands for an absent enterprise or team: NULLs never collide in a unique constraint, on either backend.
    __table_args__ = (UniqueConstraint("client_id", "enterprise_id", "team_id"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    client_id: str = Field(max_length=64)
    enterprise_id: str = Field(default="", max_length=64)
    team_id: str = Field(default="", max_length=64)
    # Rotating tokens (xoxe.xoxb-…) run longer than the 57 characters of a classic bot token.
    bot_token: str = Field(default="", max_length=512)
    bot_id: str = Field(default="", max_length=64)
    bot_user_id: str = Field(default="", max_length=64)
    bot_scopes: str = Field(default="", max_length=2000)
    # Empty when only a bot is stored (saved on its own, or its installation was deleted).
    installer_user_id: str = Field(default="", max_length=64)
    is_enterprise_install: bool = False
    # slack_sdk's whole Installation (user and refresh tokens, expiries, incoming webhook, custom values).
    installation: dict[str, Any] = _json_column()
    installed_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class SlackOAuthState(SQLModel, table=True):
    """A state value handed to Slack's OAuth redirect, good once until it expires."""

    __tablename__ = "slack_oauth_state"

    state: str = Field(primary_key=True, max_length=128)
    expires_at: datetime


class CommandEvent(SQLModel, table=True):
    """A platform event that carried a command, kept a while so a redelivery (a retry, a restart) runs it once."""

    __tablename__ = "command_event"

    key: str = Field(primary_key=True, max_length=300)
    created_at: datetime = Field(default_factory=utcnow, index=True)


class ConfigEpoch(SQLModel, table=True):
    """One row counting changes to what chats read (bindings, chat settings, knowledge bases, grants).

    Every such change moves it in its own transaction; a process that cached those finds them stale from one read.
    """

    __tablename__ = "config_epoch"

    id: int = Field(default=1, primary_key=True, sa_column_kwargs={"autoincrement": False})
    value: int = Field(default=0, sa_type=BigInteger)


class SharedKey(SQLModel, table=True):
    """A key every instance on this database must hold alike (the web chat's session signing key), made once."""

    __tablename__ = "shared_key"

    name: str = Field(primary_key=True, max_length=64)
    value: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class Schedule(SQLModel, table=True):
    """Work done again every `every_seconds`: a URL source re-synced, or the retention sweep (kb_id empty).

    The serving processes' clocks fire it; each firing claims its tick in `schedule_tick`, so one runs it.
    """

    __tablename__ = "schedule"
    __table_args__ = (UniqueConstraint("kind", "kb_id", "source"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    kind: str = Field(max_length=16)
    kb_id: str = Field(default="", max_length=36, index=True)
    source: str = Field(default="", max_length=2048)
    every_seconds: int
    created_by: str = Field(default="", max_length=128)
    # Where to tell the admins when the source is gone or the schedule keeps failing.
    requested_from: dict[str, Any] = _json_column()
    # What the source's server said last time, sent back so an unchanged page costs one request.
    etag: str = Field(default="", max_length=512)
    last_modified: str = Field(default="", max_length=128)
    # Conditional fetches since the last full one: a server whose validators lie is caught by the next full one.
    conditional_runs: int = 0
    last_run_at: datetime | None = None
    last_outcome: str = Field(default="", max_length=512)
    failures: int = 0
    created_at: datetime = Field(default_factory=utcnow)


class ScheduleTick(SQLModel, table=True):
    """One firing of a schedule, claimed by the first process whose clock reached it."""

    __tablename__ = "schedule_tick"

    schedule_id: str = Field(primary_key=True, max_length=36)
    tick: int = Field(primary_key=True, sa_type=BigInteger, sa_column_kwargs={"autoincrement": False})
    claimed_by: str = Field(default="", max_length=128)
    created_at: datetime = Field(default_factory=utcnow, index=True)


class FeedbackTally(SQLModel, table=True):
    """What retention keeps of the conversations it removes: per day, questions asked and the feedback given."""

    __tablename__ = "feedback_tally"

    day: str = Field(primary_key=True, max_length=10)
    questions: int = 0
    helpful: int = 0
    unhelpful: int = 0
    # How many 👎 gave each reason ({"outdated": 3}).
    reasons: dict[str, int] = _json_column()


class GraphSwitch(SQLModel, table=True):
    """Whether a knowledge base keeps an entity graph and its answers search it (an admin's `/graph on|off`)."""

    __tablename__ = "graph_switch"

    kb_id: str = Field(primary_key=True, max_length=36)
    enabled: bool = False
    updated_at: datetime = Field(default_factory=utcnow)


class GraphNode(SQLModel, table=True):
    """An entity of a knowledge base's graph, by its folded name; its id is derived from both (rag.graph)."""

    __tablename__ = "graph_node"
    __table_args__ = (UniqueConstraint("kb_id", "name"),)

    id: str = Field(primary_key=True, max_length=36)
    kb_id: str = Field(index=True, max_length=36)
    name: str = Field(max_length=256)
    label: str = Field(default="", max_length=64)
    attributes: list[str] = _json_list_column()


class GraphEdge(SQLModel, table=True):
    """A relation between two entities, as read from one document."""

    __tablename__ = "graph_edge"

    id: str = Field(primary_key=True, max_length=36)
    kb_id: str = Field(index=True, max_length=36)
    source_id: str = Field(index=True, max_length=36)
    target_id: str = Field(index=True, max_length=36)
    relation: str = Field(default="", max_length=128)
    document_id: str = Field(index=True, max_length=36)


class GraphMention(SQLModel, table=True):
    """An entity mentioned by a chunk; it goes with the chunk's row."""

    __tablename__ = "graph_mention"

    # (node, chunk) first: an entity's chunks are read off the key in order, a bounded number at a time.
    node_id: str = Field(primary_key=True, max_length=36)
    chunk_id: str = Field(primary_key=True, index=True, max_length=36)
    kb_id: str = Field(index=True, max_length=36)
    document_id: str = Field(index=True, max_length=36)
