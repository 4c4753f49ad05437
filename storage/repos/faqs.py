"""FAQ entries: saved by (knowledge base, standard question), so a re-import updates in place."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import delete
from sqlmodel import col, select

from storage.db import Database
from storage.errors import NotFound
from storage.models import Faq, utcnow
from storage.records import FaqRecord

_IN_BATCH = 500


@dataclass(frozen=True, slots=True)
class FaqDraft:
    """An FAQ entry to save; `id` is used for a new entry, `content_hash` tells whether one changed."""

    id: str
    question: str
    similar_questions: tuple[str, ...]
    negative_questions: tuple[str, ...]
    answers: tuple[str, ...]
    enabled: bool
    content_hash: str


def _record(row: Faq) -> FaqRecord:
    return FaqRecord(
        id=row.id,
        kb_id=row.kb_id,
        question=row.question,
        similar_questions=tuple(row.similar_questions),
        negative_questions=tuple(row.negative_questions),
        answers=tuple(row.answers),
        enabled=row.enabled,
        content_hash=row.content_hash,
    )


class FaqRepo:
    """The faq table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def save_many(self, kb_id: str, drafts: Sequence[FaqDraft]) -> list[tuple[FaqRecord, FaqRecord | None]]:
        """Insert or update each draft (matched by id) in one transaction; returns (saved, previous) pairs."""
        saved: list[tuple[FaqRecord, FaqRecord | None]] = []
        async with self._db.session() as session:
            existing = {row.id: row for row in (await session.exec(select(Faq).where(Faq.kb_id == kb_id))).all()}
            for draft in drafts:
                row = existing.get(draft.id)
                previous = _record(row) if row is not None else None
                if row is None:
                    row = Faq(id=draft.id, kb_id=kb_id, question=draft.question)
                row.question = draft.question
                row.similar_questions = list(draft.similar_questions)
                row.negative_questions = list(draft.negative_questions)
                row.answers = list(draft.answers)
                row.enabled = draft.enabled
                row.content_hash = draft.content_hash
                row.updated_at = utcnow()
                session.add(row)
                saved.append((_record(row), previous))
        return saved

    async def in_kb(self, kb_id: str) -> list[FaqRecord]:
        """Every FAQ of the knowledge base, by question."""
        async with self._db.session() as session:
            rows = (await session.exec(select(Faq).where(Faq.kb_id == kb_id).order_by(col(Faq.question)))).all()
        return [_record(row) for row in rows]

    async def by_ids(self, faq_ids: Sequence[str]) -> list[FaqRecord]:
        """The stored FAQs among `faq_ids`."""
        found: list[FaqRecord] = []
        unique = list(dict.fromkeys(faq_ids))
        if not unique:
            return found
        async with self._db.session() as session:
            for start in range(0, len(unique), _IN_BATCH):
                rows = (await session.exec(select(Faq).where(col(Faq.id).in_(unique[start : start + _IN_BATCH])))).all()
                found.extend(_record(row) for row in rows)
        return found

    async def delete(self, faq_id: str) -> None:
        """Remove one FAQ; raises NotFound."""
        async with self._db.session() as session:
            if await session.get(Faq, faq_id) is None:
                raise NotFound("faq", faq_id)
            await session.exec(delete(Faq).where(col(Faq.id) == faq_id))
