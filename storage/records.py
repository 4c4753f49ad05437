"""Plain records that cross out of storage: repositories and the index return these, never rows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal


@dataclass(frozen=True, slots=True)
class KnowledgeBaseRecord:
    """A knowledge base as the layers above see it."""

    id: str
    name: str
    description: str
    chunking: dict[str, Any]
    created_at: datetime
    # The tenant that owns it: '' for the operator, "slack:T123" for a workspace installed through OAuth.
    owner: str = ""


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """One child chunk to index: display text, BM25 text and the ids that join back to SQL."""

    chunk_id: str
    kb_id: str
    document_id: str
    segment_id: str | None
    position: int
    start: int
    end: int
    text: str
    bm25_text: str
    chunk_type: str = "text"
    metadata: dict[str, Any] = field(default_factory=dict)
    # The document's title, stored in the index so answers cite it without a SQL read.
    title: str = ""


@dataclass(frozen=True, slots=True)
class FaqQuestionRecord:
    """One question variant of an FAQ to index; `kind` is standard, similar or negative."""

    variant_id: str
    kb_id: str
    faq_id: str
    kind: Literal["standard", "similar", "negative"]
    text: str
    bm25_text: str


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One index match; `score` is the leg's own (cosine similarity, BM25 or fused)."""

    id: str
    score: float
    properties: dict[str, Any] = field(default_factory=dict)
    # The object's stored vector, when the search asked for it (chunk searches do).
    vector: list[float] | None = None


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """Who holds a named lease, and until when."""

    name: str
    owner: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class IndexWriteRecord:
    """Chunks written to the vector index whose SQL commit was not yet confirmed, and the documents whose index
    objects its owner alone may write or remove meanwhile."""

    id: str
    owner: str
    chunk_ids: tuple[str, ...]
    expires_at: datetime
    document_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """A document of a knowledge base, without its text."""

    id: str
    kb_id: str
    title: str
    source_uri: str
    mime_type: str
    content_hash: str
    rule_hash: str
    status: str
    segment_count: int
    chunk_count: int
    char_count: int
    meta: dict[str, Any]
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class SegmentRecord:
    """A parent chunk with the ids of the child chunks inside it."""

    segment_id: str
    document_id: str
    kb_id: str
    position: int
    start: int
    end: int
    text: str
    child_ids: tuple[str, ...]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DocumentVersion:
    """Everything one ingestion of a document writes: its row fields, parents and children."""

    kb_id: str
    source_uri: str
    title: str
    mime_type: str
    content_hash: str
    rule_hash: str
    text: str
    segments: tuple[SegmentRecord, ...]
    chunks: tuple[ChunkRecord, ...]
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FaqRecord:
    """An FAQ entry as stored."""

    id: str
    kb_id: str
    question: str
    similar_questions: tuple[str, ...]
    negative_questions: tuple[str, ...]
    answers: tuple[str, ...]
    enabled: bool
    content_hash: str


JobStatus = Literal["queued", "running", "succeeded", "failed"]


@dataclass(frozen=True, slots=True)
class JobRecord:
    """A durable ingestion job and its progress."""

    id: str
    kb_id: str
    kind: str
    source: str
    status: JobStatus
    stage: str
    done: int
    total: int
    error: str
    requested_by: str
    requested_from: dict[str, Any]
    result: dict[str, Any]
    attempts: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    lease_owner: str = ""
    """The runner that holds the job (queued for it, or running in it); empty when any runner may take it."""
    lease_expires_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    """One chat or thread on one platform, named by (platform, workspace, chat, thread)."""

    id: str
    platform: str
    workspace: str
    chat: str
    thread: str
    created_at: datetime
    reset_at: datetime | None = None


MessageRole = Literal["user", "assistant"]
MessageStatus = Literal["done", "streaming", "failed", "undelivered"]
"""`streaming` while an answer is being written, `failed` when its turn broke; `done` otherwise."""


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """One stored message; a user message and its answer share a `request_id`."""

    id: str
    conversation_id: str
    request_id: str
    role: MessageRole
    text: str
    status: MessageStatus
    platform_message_id: str
    meta: dict[str, Any]
    created_at: datetime
    author: str = ""
    feedback: str = ""
    feedback_reason: str = ""
    feedback_note: str = ""
    feedback_by: str = ""
    # The process writing an answer while it is `streaming`.
    instance: str = ""


@dataclass(frozen=True, slots=True)
class TextSpan:
    """A character range [start, end) of one document's cleaned text."""

    document_id: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class MergeReads:
    """What MERGE reads in one go: parents by id, the chunks overlapping some spans, and those spans' texts."""

    segments: tuple[SegmentRecord, ...] = ()
    chunks: tuple[ChunkRecord, ...] = ()
    texts: Mapping[TextSpan, str] = field(default_factory=dict)


AnswerMode = Literal["mention", "all"]
"""`mention`: answer when addressed (mention, reply, command, private chat); `all`: every question in the chat."""


@dataclass(frozen=True, slots=True)
class ChatSettingRecord:
    """How the bot behaves in one chat; empty values mean the service's defaults."""

    platform: str
    workspace: str
    chat: str
    answer_mode: AnswerMode | None = None
    fallback_text: str = ""
    # The language the bot replies in here; "" for the language of each message.
    language: str = ""
    # Whether answers here search the web too (`/web on`).
    web_search: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SlackInstall:
    """One Slack app's installation in a workspace or org: its key, the bot's credentials, and the rest as JSON.

    `enterprise_id` and `team_id` are "" when absent; an org-wide install is keyed by its enterprise with team "".
    `installer_user_id` is "" when only a bot is stored. `installation` holds slack_sdk's whole Installation.
    """

    client_id: str
    enterprise_id: str = ""
    team_id: str = ""
    bot_token: str = field(default="", repr=False)
    bot_id: str = ""
    bot_user_id: str = ""
    bot_scopes: tuple[str, ...] = ()
    installer_user_id: str = ""
    is_enterprise_install: bool = False
    installation: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class SlackInstallRecord(SlackInstall):
    """A stored installation: `installed_at` is its first save in this workspace, `updated_at` its latest."""

    installed_at: datetime
    updated_at: datetime


ScheduleKind = Literal["url_sync", "retention"]


@dataclass(frozen=True, slots=True)
class ScheduleRecord:
    """Work done again every `every_seconds`, with how its last run went."""

    id: str
    kind: str
    kb_id: str
    source: str
    every_seconds: int
    created_by: str
    requested_from: dict[str, Any]
    etag: str
    last_modified: str
    conditional_runs: int
    last_run_at: datetime | None
    last_outcome: str
    failures: int
    created_at: datetime


@dataclass(frozen=True, slots=True)
class GraphEntityRecord:
    """An entity as the graph stores it: its folded name (the match key), its name as written, a coarse label."""

    key: str
    name: str
    label: str = ""
    attributes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GraphRelationRecord:
    """A relation between two entities (by their folded names)."""

    source: str
    target: str
    relation: str


@dataclass(frozen=True, slots=True)
class ChunkGraph:
    """What one chunk of a document mentions, and the relations read from it."""

    document_id: str
    chunk_id: str
    entities: tuple[GraphEntityRecord, ...]
    relations: tuple[GraphRelationRecord, ...] = ()
