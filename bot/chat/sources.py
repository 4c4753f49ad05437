"""The sources of an answer as a person sees them (numbered, titled, linked, with a snippet), built only here.

Under an answer as it ends they come from the turn's candidates; under a stored answer (`/sources`, the web chat's
history) from what the turn stored, with the texts read back from the database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

from bot.types import SourceLink, web_url
from rag.types import Candidate
from storage.records import ChunkRecord, FaqRecord, MessageRecord

SNIPPET_CHARS: Final = 240


class DocumentTexts(Protocol):
    """Where documents' addresses and chunks' texts are read (met by storage.repos.documents.DocumentRepo)."""

    async def source_uris(self, document_ids: Sequence[str]) -> dict[str, str]:
        """Each document's source address by id."""
        ...

    async def chunks_with_titles(self, chunk_ids: Sequence[str]) -> list[tuple[ChunkRecord, str]]:
        """The chunks with these ids, each with its document's title."""
        ...


class FaqTexts(Protocol):
    """Where FAQs are read by id (met by storage.repos.faqs.FaqRepo)."""

    async def by_ids(self, faq_ids: Sequence[str]) -> list[FaqRecord]:
        """The FAQs with these ids."""
        ...


class SourceBook:
    """Builds the SourceLinks shown under answers, live and stored."""

    def __init__(self, documents: DocumentTexts, faqs: FaqTexts) -> None:
        self._documents = documents
        self._faqs = faqs

    async def of_turn(self, candidates: Sequence[Candidate]) -> list[SourceLink]:
        """The numbered sources of an answer as it ends, with links for documents fetched from URLs."""
        uris = await self._documents.source_uris([c.document_id for c in candidates if c.document_id])
        return [
            _live_link(number, candidate, uris.get(candidate.document_id or "", ""))
            for number, candidate in enumerate(candidates, start=1)
        ]

    async def of_answers(self, answers: Sequence[MessageRecord]) -> dict[str, list[SourceLink]]:
        """The sources each stored answer showed, by message id, their snippets read back from the database."""
        stored = [source for answer in answers for source in _stored(answer)]
        if not stored:
            return {answer.id: [] for answer in answers}
        uris = await self._documents.source_uris([_field(s, "document_id") for s in stored if s.get("document_id")])
        chunk_ids = [_field(s, "id") for s in stored if s.get("kind") == "chunk" and s.get("id")]
        texts = {chunk.chunk_id: chunk.text for chunk, _ in await self._documents.chunks_with_titles(chunk_ids)}
        faq_ids = [_field(s, "id") for s in stored if s.get("kind") == "faq" and s.get("id")]
        for faq in await self._faqs.by_ids(faq_ids) if faq_ids else []:
            texts[faq.id] = f"{faq.question} — {faq.answers[0] if faq.answers else ''}"
        return {
            answer.id: [
                _stored_link(number, source, uris, texts) for number, source in enumerate(_stored(answer), start=1)
            ]
            for answer in answers
        }


def snippet(text: str) -> str:
    """A source's text as one short line under its title."""
    line = " ".join(text.split())
    return line if len(line) <= SNIPPET_CHARS else line[: SNIPPET_CHARS - 1].rstrip() + "…"


def _stored(answer: MessageRecord) -> list[Mapping[str, Any]]:
    sources = answer.meta.get("sources", []) if answer.role == "assistant" else []
    return [source for source in sources if isinstance(source, Mapping)]


def _field(source: Mapping[str, Any], name: str) -> str:
    return str(source.get(name) or "")


def _stored_link(number: int, source: Mapping[str, Any], uris: dict[str, str], texts: dict[str, str]) -> SourceLink:
    document_id = _field(source, "document_id")
    return SourceLink(
        number=number,
        title=_field(source, "title") or _field(source, "id"),
        document_id=document_id,
        url=web_url(uris.get(document_id, "")),
        snippet=snippet(texts.get(_field(source, "id"), "")),
    )


def _live_link(number: int, candidate: Candidate, uri: str) -> SourceLink:
    meta: Mapping[str, Any] = candidate.metadata
    title = next(
        (" ".join(value.split()) for k in ("title", "filename") if isinstance(value := meta.get(k), str) and value),
        "",
    )
    if not title and candidate.kind == "faq" and isinstance(question := meta.get("question"), str):
        title = "FAQ: " + " ".join(question.split())
    return SourceLink(
        number=number,
        title=title or candidate.document_id or candidate.id,
        document_id=candidate.document_id or "",
        url=web_url(uri),
        snippet=snippet(candidate.text),
    )
