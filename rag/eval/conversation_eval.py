"""Conversation evaluation: labelled multi-turn conversations, each turn judged on what the bot did; pure code."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, cast, get_args

from rag.eval.answer_eval import unwrapped

Expect = Literal["answer", "decline", "smalltalk"]

# The turn outcomes (rag.stages.generate) that say the bot found nothing to answer from.
DECLINED: Final = frozenset({"no_match"})
# The outcomes of a turn that never got a real reply: no expectation is met by them.
BROKEN: Final = frozenset({"failed", "refused"})

# How much of an answer the failure listing shows.
SHOWN_CHARS: Final = 120


@dataclass(frozen=True, slots=True)
class ScriptedTurn:
    """One labelled turn: the question, what the bot should do, the facts its answer must quote, the files it may
    cite."""

    question: str
    expect: Expect
    facts: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Conversation:
    """A named conversation: its turns, asked in order in one chat."""

    name: str
    turns: tuple[ScriptedTurn, ...]


@dataclass(frozen=True, slots=True)
class PlayedTurn:
    """What the bot did on a turn: its answer, how the turn ended, the query it searched and the files it cited."""

    answer: str
    outcome: str
    rewritten: str = ""
    cited: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Verdict:
    """One turn judged: whether it met its expectation, whether its citations were right (answers only), and why
    not."""

    conversation: str
    number: int
    turn: ScriptedTurn
    played: PlayedTurn
    passed: bool
    sources_ok: bool | None
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class KindScore:
    """How many turns of one kind met their expectation."""

    kind: str
    turns: int
    passed: int

    @property
    def rate(self) -> float:
        """The share passed (0.0 without turns)."""
        return self.passed / self.turns if self.turns else 0.0


def load_conversations(path: Path) -> list[Conversation]:
    """Every conversation of a JSON Lines file (`{"name", "turns": [...]}` a line); ValueError names a bad line."""
    conversations = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            turns = tuple(_turn(item) for item in row["turns"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path.name} line {number}: {exc}") from exc
        if not turns:
            raise ValueError(f"{path.name} line {number}: a conversation without turns")
        conversations.append(Conversation(str(row.get("name") or f"line {number}"), turns))
    return conversations


def _turn(item: dict[str, object]) -> ScriptedTurn:
    expect = str(item.get("expect", "answer"))
    if expect not in get_args(Expect):
        raise ValueError(f"expect must be one of {', '.join(get_args(Expect))}, not {expect!r}")
    facts = tuple(str(fact) for fact in cast("list[object]", item.get("facts") or []))
    sources = tuple(str(source) for source in cast("list[object]", item.get("sources") or []))
    if expect == "answer" and not facts:
        raise ValueError(f"an answer turn needs facts: {item.get('question')!r}")
    return ScriptedTurn(str(item["question"]), cast("Expect", expect), facts, sources)


def normalised(text: str) -> str:
    """Text as facts are compared: case-folded, whitespace runs as one space, none between Chinese characters."""
    return unwrapped(text.casefold())


def judge(conversation: str, number: int, turn: ScriptedTurn, played: PlayedTurn) -> Verdict:
    """Whether `played` met `turn`'s expectation, and for answers whether it cited only expected files."""
    reasons: list[str] = []
    if played.outcome in BROKEN:
        reasons.append(f"the turn ended {played.outcome}")
    declined = played.outcome in DECLINED
    sources_ok: bool | None = None
    if turn.expect == "decline":
        if not declined and played.outcome not in BROKEN:
            reasons.append("answered instead of declining")
    elif turn.expect == "smalltalk":
        if declined:
            reasons.append("declined small talk as a question it found nothing for")
    else:
        if declined:
            reasons.append("declined")
        answer = normalised(played.answer)
        missing = [fact for fact in turn.facts if normalised(fact) not in answer]
        if missing and not declined:
            reasons.append("missing " + "; ".join(repr(fact) for fact in missing))
        sources_ok = bool(played.cited) and set(played.cited) <= set(turn.sources)
        if not sources_ok:
            unexpected = sorted(set(played.cited) - set(turn.sources))
            reasons.append("cited " + (", ".join(unexpected) + " (not expected)" if unexpected else "nothing"))
    passed = not [reason for reason in reasons if not reason.startswith("cited ")]
    return Verdict(conversation, number, turn, played, passed, sources_ok, tuple(reasons))


def kind_scores(verdicts: Sequence[Verdict]) -> list[KindScore]:
    """Per expectation kind, turns and passes; answers twice: their facts, and their sources."""
    scores = []
    for kind in get_args(Expect):
        of_kind = [v for v in verdicts if v.turn.expect == kind]
        label = "answer: facts" if kind == "answer" else kind
        scores.append(KindScore(label, len(of_kind), sum(v.passed for v in of_kind)))
        if kind == "answer":
            scores.append(KindScore("answer: sources", len(of_kind), sum(bool(v.sources_ok) for v in of_kind)))
    scores.append(KindScore("all turns", len(verdicts), sum(v.passed for v in verdicts)))
    return scores


def score_table(name: str, verdicts: Sequence[Verdict]) -> str:
    """The per-kind figures as a Markdown table, then each turn that fell short (facts, decline or sources)."""
    lines = [f"### {name}", "", "| turns | count | passed | rate |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {s.kind} | {s.turns} | {s.passed} | {s.rate:.1%} |" for s in kind_scores(verdicts)]
    failures = [v for v in verdicts if v.reasons]
    if failures:
        lines += ["", f"Turns that fell short ({len(failures)}):", ""]
        lines += [_failure_lines(v) for v in failures]
    return "\n".join(lines) + "\n"


def _failure_lines(verdict: Verdict) -> str:
    played = verdict.played
    answer = " ".join(played.answer.split())
    shown = answer[:SHOWN_CHARS] + ("…" if len(answer) > SHOWN_CHARS else "")
    rows = [
        f"- [{verdict.conversation} #{verdict.number}] {verdict.turn.question!r} (expect {verdict.turn.expect}): "
        + "; ".join(verdict.reasons),
    ]
    if played.rewritten and played.rewritten != verdict.turn.question:
        rows.append(f"    searched as: {played.rewritten!r}")
    cited = ", ".join(played.cited) or "nothing"
    rows.append(f"    outcome {played.outcome}, cited {cited}: {shown}")
    return "\n".join(rows)
