"""What people asked that went wrong: questions that found nothing and answers given a 👎, grouped by meaning.

`ragbot stats` and `/stats` show these groups ("12 people asked about VPN on mobile") instead of one line each.
A question found nothing when its answer's outcome is `no_match`: retrieval found nothing that fits, or the model
said so; whatever stood in (the fixed text, an extractive fallback) is not an answer from the documents.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, Protocol

from bot.types import ConversationKey
from rag.clusters import SAME_QUESTION, cluster_by_meaning
from rag.ports import Embedder
from storage.records import MessageRecord

# How many groups a report shows of each kind: the ones most asked; the rest is a count.
TOP_GROUPS: Final = 10
# The most questions of each kind a chat's report groups (the newest): embedding them takes ~5 s on 2 cores
# (DESIGN.md: ~450 short texts/s), a bounded wait for an admin in a chat.
CHAT_NEWEST: Final = 2_000


@dataclass(frozen=True, slots=True)
class Miss:
    """One question that went wrong, and the reason given for its 👎 ("" for none or for a question that found
    nothing)."""

    question: str
    reason: str = ""
    note: str = ""


@dataclass(frozen=True, slots=True)
class MissGroup:
    """Questions asking the same thing: how many, the most central of them, the reasons given (most given first)."""

    count: int
    example: str
    reasons: tuple[tuple[str, int], ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Misses:
    """The groups of questions that found nothing and of answers given a 👎, largest first, with how many of each
    there were in all (groups past the top are counted, not shown)."""

    unanswered: tuple[MissGroup, ...] = ()
    disliked: tuple[MissGroup, ...] = ()
    unanswered_total: int = 0
    disliked_total: int = 0


def find_misses(messages: Sequence[MessageRecord]) -> tuple[list[Miss], list[Miss]]:
    """(questions that found nothing, answers given a 👎) among stored messages, paired by request id."""
    questions = {m.request_id: m for m in messages if m.role == "user"}
    unanswered: list[Miss] = []
    disliked: list[Miss] = []
    for answer in (m for m in messages if m.role == "assistant"):
        question = questions.get(answer.request_id)
        if question is None or not question.text.strip():
            continue
        text = question.text.strip()
        if answer.meta.get("outcome") == "no_match":
            unanswered.append(Miss(text))
        if answer.feedback == "down":
            disliked.append(Miss(text, answer.feedback_reason, answer.feedback_note))
    return unanswered, disliked


async def group_misses(
    misses: Sequence[Miss], embedder: Embedder, *, top: int = TOP_GROUPS, threshold: float = SAME_QUESTION
) -> tuple[MissGroup, ...]:
    """The `top` largest groups of `misses` by the meaning of their questions."""
    if not misses:
        return ()
    vectors = await embedder.embed([miss.question for miss in misses], kind="query")
    # Up to seconds of numpy for 10k questions: off the event loop, so no conversation waits on a report.
    clusters = await asyncio.to_thread(cluster_by_meaning, vectors, threshold)
    return tuple(_group([misses[i] for i in cluster.members], misses[cluster.central]) for cluster in clusters[:top])


async def misses_of(
    messages: Sequence[MessageRecord], embedder: Embedder, *, top: int = TOP_GROUPS, newest: int | None = None
) -> Misses:
    """Both kinds of misses among `messages` (oldest first), grouped; with `newest`, only that many of the latest
    of each kind are grouped (the totals still count them all)."""
    unanswered, disliked = find_misses(messages)
    keep = slice(-newest if newest else None, None)
    return Misses(
        unanswered=await group_misses(unanswered[keep], embedder, top=top),
        disliked=await group_misses(disliked[keep], embedder, top=top),
        unanswered_total=len(unanswered),
        disliked_total=len(disliked),
    )


def _group(members: Sequence[Miss], central: Miss) -> MissGroup:
    reasons = Counter(miss.reason for miss in members if miss.reason)
    notes = tuple(dict.fromkeys(miss.note for miss in members if miss.note))
    return MissGroup(len(members), central.question, tuple(reasons.most_common()), notes)


class StoredMessages(Protocol):
    """Stored messages by time (met by storage.repos.conversations.ConversationRepo)."""

    async def messages_since(
        self, since: datetime, *, platform: str | None = None, workspace: str | None = None, chat: str | None = None
    ) -> list[MessageRecord]:
        """Every message stored at or after `since` (of one chat when given), oldest first."""
        ...


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class ChatReport:
    """A chat's figures over some days (questions, 👍, 👎) and what went wrong in it, grouped."""

    questions: int
    helpful: int
    unhelpful: int
    misses: Misses


@dataclass(frozen=True, slots=True)
class MissReports:
    """`/stats`: one chat's report from its stored messages (the embedder groups them; `clock` says when now is)."""

    messages: StoredMessages
    embedder: Embedder
    clock: Callable[[], datetime] = _utcnow

    async def of_chat(self, key: ConversationKey, days: int, *, top: int = TOP_GROUPS) -> ChatReport:
        """The report of the chat `key` belongs to (every thread of it) over the last `days` days."""
        since = self.clock() - timedelta(days=days)
        stored = await self.messages.messages_since(
            since, platform=key.platform, workspace=key.workspace, chat=key.chat
        )
        answers = [m for m in stored if m.role == "assistant"]
        return ChatReport(
            questions=sum(m.role == "user" for m in stored),
            helpful=sum(m.feedback == "up" for m in answers),
            unhelpful=sum(m.feedback == "down" for m in answers),
            misses=await misses_of(stored, self.embedder, top=top, newest=CHAT_NEWEST),
        )
