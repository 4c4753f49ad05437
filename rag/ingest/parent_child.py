"""From extracted sections to cleaned text, parents and children, following a knowledge base's rule."""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tiktoken import Encoding

from rag.ingest.clean import clean
from rag.ingest.rules import FULL_DOC_MAX_TOKENS, ChunkingRule, SplitRule
from rag.ingest.split.separators import (
    parse_separator,
    split_fixed,
    split_markdown,
    split_recursive,
    split_tokens,
    token_length,
)
from rag.ingest.split.structure import split_structure
from rag.ingest.types import ExtractedDocument, LengthFunction, TextChunk

_SECTION_JOIN = "\n\n"


@dataclass(frozen=True, slots=True)
class CleanedDocument:
    """The cleaned text and where each extracted section (page, slide, sheet) starts in it."""

    text: str
    section_starts: tuple[int, ...]
    section_metadata: tuple[Mapping[str, Any], ...]

    def metadata_at(self, offset: int) -> Mapping[str, Any]:
        """The metadata of the section holding `offset` (a chunk's page, slide or sheet)."""
        if not self.section_starts:
            return {}
        index = max(0, bisect.bisect_right(self.section_starts, offset) - 1)
        return self.section_metadata[index]


@dataclass(frozen=True, slots=True)
class ParentChunk:
    """A parent and the children cut from it (children's offsets are in the whole document)."""

    chunk: TextChunk
    children: tuple[TextChunk, ...]


def clean_document(document: ExtractedDocument, rule: ChunkingRule) -> CleanedDocument:
    """Clean each section and join them, remembering where each one starts."""
    parts: list[str] = []
    starts: list[int] = []
    metadata: list[Mapping[str, Any]] = []
    offset = 0
    for section in document.sections:
        text = clean(
            section.text,
            remove_extra_whitespace=rule.cleaning.remove_extra_whitespace,
            remove_urls_emails=rule.cleaning.remove_urls_emails,
        ).strip()
        if not text:
            continue
        if parts:
            offset += len(_SECTION_JOIN)
        starts.append(offset)
        metadata.append(section.metadata)
        parts.append(text)
        offset += len(text)
    return CleanedDocument(_SECTION_JOIN.join(parts), tuple(starts), tuple(metadata))


def _length(rule: SplitRule, encoding: Encoding) -> LengthFunction:
    return token_length(encoding) if rule.unit == "tokens" else len


def split_by_rule(text: str, rule: SplitRule, encoding: Encoding, boundaries: Sequence[int] = ()) -> list[TextChunk]:
    """Cut `text` with the splitter the rule names; `structure` also cuts where an extracted part (page, slide,
    sheet) starts, at the offsets in `boundaries`."""
    length = _length(rule, encoding)
    if rule.mode == "structure":
        return split_structure(
            text, max_size=rule.max_tokens, overlap=rule.overlap, length=length, boundaries=boundaries
        )
    if rule.mode == "token":
        return split_tokens(text, max_tokens=rule.max_tokens, overlap_tokens=rule.overlap, encoding=encoding)
    if rule.mode == "markdown":
        return split_markdown(text, max_size=rule.max_tokens, overlap=rule.overlap, length=length)
    if rule.mode == "fixed":
        separator = parse_separator(rule.separator)
        return split_fixed(text, separator=separator, max_size=rule.max_tokens, overlap=rule.overlap, length=length)
    return split_recursive(text, max_size=rule.max_tokens, overlap=rule.overlap, length=length)


def _child(chunk: TextChunk, parent: TextChunk, position: int) -> TextChunk:
    """A child cut from `parent.text` with offsets in the whole document, inheriting the parent's metadata
    (its heading path) under its own."""
    start, end = chunk.start + parent.start, chunk.end + parent.start
    return TextChunk(chunk.text, start, end, position, {**parent.metadata, **chunk.metadata})


def _full_doc_parents(text: str, encoding: Encoding) -> list[TextChunk]:
    # One parent per document, except that a very long one is cut into ~10k-token parents
    # instead of being truncated (Dify drops everything past the cap).
    if len(text) <= FULL_DOC_MAX_TOKENS or len(encoding.encode(text, disallowed_special=())) <= FULL_DOC_MAX_TOKENS:
        return [TextChunk(text, 0, len(text), 0)]
    return split_recursive(text, max_size=FULL_DOC_MAX_TOKENS, overlap=0, length=token_length(encoding))


def build_chunks(
    text: str, rule: ChunkingRule, encoding: Encoding, boundaries: Sequence[int] = ()
) -> list[ParentChunk]:
    """General mode: each chunk is its own parent with no children. Parent-child: children inside parents.

    `boundaries` are where the extracted parts start (CleanedDocument.section_starts): the structure splitter
    never lets a chunk span two pages, slides or sheets.
    """
    if not text.strip():
        return []
    if rule.mode == "general":
        return [ParentChunk(chunk, ()) for chunk in split_by_rule(text, rule.segment, encoding, boundaries)]
    parents = (
        _full_doc_parents(text, encoding)
        if rule.parent_mode == "full_doc"
        else split_by_rule(text, rule.segment, encoding, boundaries)
    )
    result: list[ParentChunk] = []
    position = 0
    for parent in parents:
        children = []
        for child in split_by_rule(parent.text, rule.child, encoding):
            children.append(_child(child, parent, position))
            position += 1
        result.append(ParentChunk(parent, tuple(children)))
    return result
