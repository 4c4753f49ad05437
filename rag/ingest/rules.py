"""A knowledge base's chunking rule: general or parent-child, sizes, separators and cleaning, validated."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from rag.errors import InvalidRule

SplitMode = Literal["structure", "recursive", "fixed", "markdown", "token"]
Unit = Literal["tokens", "chars"]

MIN_TOKENS, MAX_TOKENS = 50, 2000
MAX_OVERLAP_SHARE = 0.5
# Dify caps a full-document parent so one parent never floods the model's context.
FULL_DOC_MAX_TOKENS = 10000


@dataclass(frozen=True, slots=True)
class SplitRule:
    """How to cut text: a splitter mode, its size limit and overlap, and a fixed separator for `fixed`.

    `structure` (the default) follows headings, pages and tables (rag.ingest.split.structure); `recursive` cuts
    the text as one stretch by paragraphs, lines and sentences, as the default did before.
    """

    mode: SplitMode = "structure"
    max_tokens: int = 500
    overlap: int = 50
    separator: str = "\n\n"
    unit: Unit = "tokens"


@dataclass(frozen=True, slots=True)
class CleaningRules:
    """Optional cleaning on top of the default rules (markers, control characters, U+FFFE)."""

    remove_extra_whitespace: bool = True
    remove_urls_emails: bool = False


@dataclass(frozen=True, slots=True)
class ChunkingRule:
    """General mode indexes `segment` chunks; parent-child indexes `child` chunks of `segment` parents.

    parse_rule gives a parent-child rule recursive parents unless it names their mode.
    """

    mode: Literal["general", "parent_child"] = "general"
    parent_mode: Literal["paragraph", "full_doc"] = "paragraph"
    segment: SplitRule = field(default_factory=SplitRule)
    # Children are cut inside one parent, which already follows the structure: plain recursive cutting.
    child: SplitRule = field(
        default_factory=lambda: SplitRule(mode="recursive", max_tokens=200, overlap=20, separator="\n")
    )
    cleaning: CleaningRules = field(default_factory=CleaningRules)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, as stored on the knowledge base."""
        return asdict(self)

    def fingerprint(self) -> str:
        """A short stable hash: a document is re-split when its rule's fingerprint changes."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


_MODES = ("structure", "recursive", "fixed", "markdown", "token")


def _expect(condition: bool, field_name: str, message: str) -> None:
    if not condition:
        raise InvalidRule(field_name, message)


def _int(data: dict[str, Any], key: str, default: int, prefix: str) -> int:
    value = data.get(key, default)
    _expect(
        isinstance(value, int) and not isinstance(value, bool),
        f"{prefix}.{key}",
        f"must be a whole number, got {value!r}",
    )
    return int(value)


def _split_rule(data: Any, default: SplitRule, prefix: str) -> SplitRule:
    if data is None:
        data = {}
    _expect(isinstance(data, dict), prefix, "must be an object")
    unknown = set(data) - {"mode", "max_tokens", "overlap", "separator", "unit"}
    _expect(not unknown, prefix, f"unknown field(s) {', '.join(sorted(unknown))}")
    mode = data.get("mode", default.mode)
    _expect(mode in _MODES, f"{prefix}.mode", f"must be one of {', '.join(_MODES)}, got {mode!r}")
    unit = data.get("unit", default.unit)
    _expect(unit in ("tokens", "chars"), f"{prefix}.unit", f"must be tokens or chars, got {unit!r}")
    max_tokens = _int(data, "max_tokens", default.max_tokens, prefix)
    _expect(
        MIN_TOKENS <= max_tokens <= MAX_TOKENS,
        f"{prefix}.max_tokens",
        f"must be {MIN_TOKENS}..{MAX_TOKENS}, got {max_tokens}",
    )
    overlap = _int(data, "overlap", default.overlap, prefix)
    limit = int(max_tokens * MAX_OVERLAP_SHARE)
    _expect(0 <= overlap <= limit, f"{prefix}.overlap", f"must be 0..{limit} (50% of max_tokens), got {overlap}")
    separator = data.get("separator", default.separator)
    _expect(isinstance(separator, str), f"{prefix}.separator", "must be text")
    _expect(len(separator) <= 32, f"{prefix}.separator", "must be at most 32 characters")
    return SplitRule(mode=mode, max_tokens=max_tokens, overlap=overlap, separator=separator, unit=unit)


def parse_rule(data: dict[str, Any] | None) -> ChunkingRule:
    """A validated rule from its stored or user-given form; raises InvalidRule naming the field."""
    data = data or {}
    default = ChunkingRule()
    unknown = set(data) - {"mode", "parent_mode", "segment", "child", "cleaning"}
    _expect(not unknown, "rule", f"unknown field(s) {', '.join(sorted(unknown))}")
    mode = data.get("mode", default.mode)
    _expect(mode in ("general", "parent_child"), "mode", f"must be general or parent_child, got {mode!r}")
    parent_mode = data.get("parent_mode", default.parent_mode)
    _expect(
        parent_mode in ("paragraph", "full_doc"), "parent_mode", f"must be paragraph or full_doc, got {parent_mode!r}"
    )
    cleaning = data.get("cleaning") or {}
    _expect(isinstance(cleaning, dict), "cleaning", "must be an object")
    unknown = set(cleaning) - {"remove_extra_whitespace", "remove_urls_emails"}
    _expect(not unknown, "cleaning", f"unknown field(s) {', '.join(sorted(unknown))}")
    for key, value in cleaning.items():
        _expect(isinstance(value, bool), f"cleaning.{key}", f"must be true or false, got {value!r}")
    # Parent-child keeps recursive parents unless the rule names another mode: the structure default is general
    # mode's, and a parent-child rule cuts as it did before that default came.
    segment_default = default.segment if mode == "general" else replace(default.segment, mode="recursive")
    segment = _split_rule(data.get("segment"), segment_default, "segment")
    child = _split_rule(data.get("child"), default.child, "child")
    if mode == "parent_child":
        _expect(
            child.max_tokens <= segment.max_tokens or parent_mode == "full_doc",
            "child.max_tokens",
            f"must not exceed segment.max_tokens ({segment.max_tokens}) in paragraph mode",
        )
    return ChunkingRule(
        mode=mode,
        parent_mode=parent_mode,
        segment=segment,
        child=child,
        cleaning=replace(default.cleaning, **cleaning),
    )
