"""One turn's state and the pipeline that runs named stages over it, timing and logging each."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from rag.types import Candidate, ChatMessage, Vector
from storage.records import MessageRecord

log = logging.getLogger(__name__)


@dataclass(slots=True)
class StageReport:
    """What one stage did: how long it took and how many items went in and came out."""

    name: str
    ms: float
    items_in: int
    items_out: int
    note: str = ""


@dataclass(slots=True)
class TurnContext:
    """One turn's mutable state; the values in it are frozen and re-scored with dataclasses.replace."""

    query: str
    kb_ids: tuple[str, ...]
    conversation_id: str = ""
    # Documents the asker pointed at; when they are small they are loaded whole ("direct" leg).
    document_ids: tuple[str, ...] = ()
    history: list[tuple[str, str]] = field(default_factory=list)
    # Whether this turn searches the web beside its knowledge bases (a provider configured and the chat's `/web on`).
    web_search: bool = False
    # The conversation since its last `/new`: the web leg keeps each scope's passages apart.
    web_scope: str = ""
    # The conversation's stored messages when the caller read them already (with the rest of its turn's read):
    # LOAD_HISTORY uses them instead of reading the conversation again.
    stored_history: tuple[MessageRecord, ...] | None = None
    # Ids of the sources the previous answer cited (chunks or FAQs): searched again as "history" matches.
    history_refs: tuple[str, ...] = ()
    rewritten: str = ""
    # The search query's embedding (SEARCH writes it; RERANK compares passages' vectors with it).
    query_vector: Vector | None = None
    candidates: list[Candidate] = field(default_factory=list)
    reranked: list[Candidate] = field(default_factory=list)
    # True once a reranker has judged the candidates: an empty `reranked` then means none is relevant,
    # not that rerank was skipped, so later stages must not fall back to the unjudged candidates.
    judged: bool = False
    merged: list[Candidate] = field(default_factory=list)
    selected: list[Candidate] = field(default_factory=list)
    messages: list[ChatMessage] = field(default_factory=list)
    answer: AsyncIterator[str] | None = None
    outcome: str = ""
    reports: list[StageReport] = field(default_factory=list)
    # The question was over the length cap and only its start was answered.
    truncated: bool = False
    # What to say when nothing fits, in the asker's words (a chat's own text, or its apology); empty: the configured
    # fallback text.
    fallback_text: str = ""
    # The answer as delivered (STREAM_ANSWER), each piece also handed to `on_text` as it comes.
    text: str = ""
    on_text: Callable[[str], Awaitable[None]] | None = None
    # Set when the asker stops the answer (`/stop`): delivery ends at once, keeping what was written.
    stop: asyncio.Event | None = None
    # Seconds the delivery may take in all; past it, it ends as if stopped, with the outcome `timed_out`.
    deadline: float | None = None

    @property
    def ranked(self) -> list[Candidate]:
        """The best ranking so far: reranked, or the searched candidates when no reranker judged them."""
        return turn_ranked(self)

    @property
    def search_query(self) -> str:
        """The rewritten question when there is one, else the question as asked."""
        return self.rewritten or self.query


def turn_ranked(turn: TurnContext) -> list[Candidate]:
    """`reranked` when a reranker judged the candidates or kept some, else `candidates`."""
    return turn.reranked if turn.judged or turn.reranked else turn.candidates


class Stage(Protocol):
    """A step of a pipeline; its docstring names the fields it reads and writes."""

    name: str

    async def run(self, turn: TurnContext) -> str:
        """Do the step; returns a short note for the stage report (may be empty)."""
        ...


def _size(turn: TurnContext) -> int:
    for items in (turn.selected, turn.merged, turn.reranked, turn.candidates):
        if items:
            return len(items)
    return 0


StageObserver = Callable[[str, StageReport], None]
"""Called with (pipeline name, report) after each stage, for metrics."""


class Pipeline:
    """A named list of stages run in order over one TurnContext."""

    def __init__(self, name: str, stages: Sequence[Stage], observe: StageObserver | None = None) -> None:
        self.name = name
        self.stages = tuple(stages)
        self._observe = observe

    async def run(self, turn: TurnContext) -> TurnContext:
        """Run every stage; an exception carries the stage's name as a note."""
        for stage in self.stages:
            before = _size(turn)
            started = time.perf_counter()
            try:
                note = await stage.run(turn)
            except Exception as exc:
                exc.add_note(f"pipeline={self.name} stage={stage.name}")
                raise
            report = StageReport(stage.name, (time.perf_counter() - started) * 1000, before, _size(turn), note)
            turn.reports.append(report)
            if self._observe is not None:
                self._observe(self.name, report)
            log.info(
                "pipeline=%s stage=%s ms=%.1f in=%d out=%d %s",
                self.name,
                report.name,
                report.ms,
                report.items_in,
                report.items_out,
                report.note,
            )
        return turn


async def answer_once(text: str) -> AsyncIterator[str]:
    """An answer stream of one piece (a refusal, an FAQ answer, an extractive answer)."""
    yield text
