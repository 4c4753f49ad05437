"""The sources of an answer as a person sees them (numbered, titled, linked, with a snippet), built only here.

Under an answer as it ends they come from the turn's candidates; under a stored answer (`/sources`, the web chat's
history) from what the turn stored, with the texts read back from the database.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

from bot.types import SourceLink, web_url
from rag.extractive import clip, plain_terms
from rag.types import Candidate
from rag.units import split_units
from storage.records import ChunkRecord, FaqRecord, MessageRecord

SNIPPET_CHARS: Final = 240
# Document addresses remembered: a document's address never changes (it is what names the document).
_URIS_KEPT: Final = 50_000


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
        self._uris: dict[str, str] = {}

    async def of_turn(self, candidates: Sequence[Candidate], answer: str = "") -> list[SourceLink]:
        """The numbered sources of `answer` as it ends, with links for documents fetched from URLs."""
        uris = await self._source_uris([c.document_id for c in candidates if c.document_id])
        return [
            _live_link(number, candidate, uris.get(candidate.document_id or "", ""), answer)
            for number, candidate in enumerate(candidates, start=1)
        ]

    async def _source_uris(self, document_ids: Sequence[str]) -> dict[str, str]:
        """Addresses by document id, read once per document: an answer's last read before its final text."""
        missing = [document_id for document_id in document_ids if document_id not in self._uris]
        if missing:
            if len(self._uris) >= _URIS_KEPT:
                self._uris.clear()
            self._uris.update(await self._documents.source_uris(missing))
        return {document_id: self._uris[document_id] for document_id in document_ids if document_id in self._uris}

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
            texts[faq.id] = faq.answers[0] if faq.answers else faq.question  # its title is the question
        return {
            answer.id: [
                _stored_link(number, source, uris, texts, answer.text)
                for number, source in enumerate(_stored(answer), start=1)
            ]
            for answer in answers
        }


def snippet(text: str, answer: str = "", number: int = 0) -> str:
    """A source's text as one short plain line under its title: the sentence of it that `answer` quoted (citing
    it as [number], or citing nothing), else its opening; Markdown marks and headings (the title's job) left out."""
    pieces: list[str] = []
    for unit in split_units(text):
        if unit.row and unit.header and (not pieces or pieces[-1] != unit.header) and unit.header not in pieces:
            pieces.append(unit.header)  # a table's first quoted row under its header
        pieces.append(unit.text)
    sentences = [plain for piece in pieces if (plain := _plain(piece))]
    if not sentences:  # nothing but headings
        sentences = [plain for line in text.splitlines() if (plain := _plain(line))]
    quoted = _quoted(sentences, _cited(answer, number)) if answer else None
    return clip(quoted or " ".join(sentences), SNIPPET_CHARS)


_HEADING: Final = re.compile(r"^\s*#{1,6}\s")
_CITATION: Final = re.compile(r"\[(\d+)\]")
# How Markdown marks its inline spans, each replaced by its text alone (Markdown's own syntax, CommonMark spec).
_INLINE: Final = (
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),  # image: its alt text
    (re.compile(r"\[([^\]]+)\](?:\([^)]*\)|\[[^\]]*\])"), r"\1"),  # link: its text
    (re.compile(r"<((?:https?|mailto):[^>\s]+)>"), r"\1"),  # autolink
    (re.compile(r"(`+)(.+?)\1"), r"\2"),  # code span
    (re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"), r"\2"),  # strong
    (re.compile(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])"), r"\1"),  # emphasis (not 2 * 3 * 4)
    (re.compile(r"(?<![\w_])_(?=\S)(.+?)(?<=\S)_(?![\w_])"), r"\1"),  # emphasis (not snake_case)
    (re.compile(r"~~(?=\S)(.+?)(?<=\S)~~"), r"\1"),  # strikethrough
    (re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~])"), r"\1"),  # backslash escapes
)
_LINE_MARKS: Final = re.compile(r"^\s*(?:#{1,6}\s+|(?:>\s?)+|(?:[-*+•]|\d{1,3}[.)])\s+)+")
# Lines that only draw: a code fence, a table's rule row, a thematic break.
_DRAWING: Final = re.compile(r"\s*(?:```.*|~~~.*|\|[\s:|-]*-[\s:|-]*|(?:[-*_]\s*){3,})")
# A sentence is quoted when the answer holds this share of its terms (verbatim quotes hold all; a close
# paraphrase most), and it has enough terms for the share to mean something.
_QUOTED_SHARE: Final = 0.6
_QUOTED_TERMS: Final = 3


def _plain(markdown: str) -> str:
    """One unit of Markdown as plain text on one line."""
    lines = []
    for line in markdown.splitlines():
        if _DRAWING.fullmatch(line):
            continue
        line = _LINE_MARKS.sub("", line)
        if "|" in line.strip(" |") and line.strip().startswith("|"):
            line = " · ".join(cell.strip() for cell in line.strip().strip("|").split("|"))
        lines.append(line)
    text = " ".join(" ".join(lines).split())
    for pattern, replacement in _INLINE:
        text = pattern.sub(replacement, text)
    return text


def _cited(answer: str, number: int) -> str:
    """What the answer says on the strength of source `number`: the text before each of its [number] marks (back to
    the mark before), or the whole answer when it cites nothing; "" when it cites only other sources."""
    marks = list(_CITATION.finditer(answer))
    if not marks:
        return answer
    said, start = [], 0
    for mark in marks:
        if int(mark.group(1)) == number:
            said.append(answer[start : mark.start()])
        start = mark.end()
    return " ".join(said)


def _quoted(sentences: Sequence[str], said: str) -> str | None:
    """The sentence `said` quotes most fully, when it quotes one."""
    words = set(plain_terms(said))
    best, best_share = None, _QUOTED_SHARE
    for sentence in sentences:
        terms = plain_terms(sentence)
        if len(set(terms)) < _QUOTED_TERMS:
            continue
        share = sum(term in words for term in terms) / len(terms)
        if share > best_share or (share == best_share and best is None):
            best, best_share = sentence, share
    return best


def _stored(answer: MessageRecord) -> list[Mapping[str, Any]]:
    sources = answer.meta.get("sources", []) if answer.role == "assistant" else []
    return [source for source in sources if isinstance(source, Mapping)]


def _field(source: Mapping[str, Any], name: str) -> str:
    return str(source.get(name) or "")


def _stored_link(
    number: int, source: Mapping[str, Any], uris: dict[str, str], texts: dict[str, str], answer: str
) -> SourceLink:
    document_id = _field(source, "document_id")
    return SourceLink(
        number=number,
        title=_field(source, "title") or _field(source, "id"),
        document_id=document_id,
        url=web_url(uris.get(document_id, "") or _field(source, "url")),
        snippet=""
        if (table := _table(source))
        else snippet(texts.get(_field(source, "id"), "") or _field(source, "text"), answer, number),
        table=table,
        page=source_page(source),
    )


def _live_link(number: int, candidate: Candidate, uri: str, answer: str) -> SourceLink:
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
        url=web_url(uri or _web_address(meta)),
        snippet="" if (table := _table(meta)) else snippet(_shown_text(candidate), answer, number),
        table=table,
        page=source_page(meta),
    )


def source_page(meta: Mapping[str, Any]) -> int:
    """The page a passage starts on, from its metadata (an extractor's `page`), or 0."""
    page = meta.get("page")
    return page if isinstance(page, int) and not isinstance(page, bool) and page > 0 else 0


def _table(meta: Mapping[str, Any]) -> tuple[tuple[str, ...], ...]:
    """A data-analysis result's cells (rag.stages.data_analysis), or none."""
    rows = meta.get("table")
    if not isinstance(rows, list | tuple):
        return ()
    return tuple(tuple(str(cell) for cell in row) for row in rows if isinstance(row, list | tuple))


def _web_address(meta: Mapping[str, Any]) -> str:
    """A web search result's address (its candidate has no document to read one from)."""
    url = meta.get("url") if meta.get("web") is True else None
    return url if isinstance(url, str) else ""


def _shown_text(candidate: Candidate) -> str:
    """What a source's snippet is cut from: an FAQ's first answer (its title is the question; the "Q:"/"Answer:"
    form of its text is for the model, in English, and would show in a Chinese chat), else the passage."""
    answers = candidate.metadata.get("answers") if candidate.kind == "faq" else None
    if isinstance(answers, list | tuple) and answers and (first := str(answers[0]).strip()):
        return first
    return candidate.text
