"""Stored conversation messages built by hand: one message, a question-and-answer round, an answer's sources."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from storage.records import MessageRecord, MessageRole, MessageStatus

AT = datetime(2025, 1, 1, tzinfo=UTC)


def _message(
    request_id: str, role: MessageRole, text: str, status: MessageStatus = "done", **meta: Any
) -> MessageRecord:
    return MessageRecord(
        id=f"{request_id}-{role}",
        conversation_id="c",
        request_id=request_id,
        role=role,
        text=text,
        status=status,
        platform_message_id="",
        meta=meta,
        created_at=AT,
    )


def _round(request_id: str, question: str, answer: str, **meta: Any) -> list[MessageRecord]:
    return [_message(request_id, "user", question), _message(request_id, "assistant", answer, **meta)]


def _sources(*ids: str) -> list[dict[str, Any]]:
    return [{"id": source_id, "kind": "chunk", "document_id": "d", "title": "t", "position": 0} for source_id in ids]
