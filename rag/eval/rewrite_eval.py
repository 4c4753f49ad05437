"""Query-rewrite evaluation on rewrite.jsonl sets: a rewriter against the gold rewrites and the unchanged query."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.eval.scores import exact_match, token_f1
from rag.rewrite import Rewriter, Round
from rag.rewrite_rules import RuleRewriter


@dataclass(frozen=True, slots=True)
class RewriteScores:
    """Mean exact match and token F1 against the gold rewrite, for a rewriter and for the query left unchanged.

    `changed` counts the queries the rewriter altered; `changed_f1` and `changed_identity_f1` are the two F1
    means over just those, which shows whether its edits help where it acts. `up`, `same` and `down` split the
    changed queries by whether their F1 rose, stayed or fell against the query left unchanged.
    """

    count: int
    exact_match: float
    token_f1: float
    identity_exact_match: float
    identity_token_f1: float
    changed: int
    changed_f1: float
    changed_identity_f1: float
    up: int
    same: int
    down: int


def rounds(history: Sequence[dict[str, Any]]) -> list[Round]:
    """The set's history as (user, assistant) rounds, oldest first.

    CANARD's `context` entries (article title, section title) become one leading round (title, section): the bot
    has no such field, and this is the nearest thing its history can carry. A user turn with no answer after it
    (CAsT) becomes (question, "").
    """
    context = [str(entry["text"]) for entry in history if entry["role"] == "context"]
    result: list[Round] = [(context[0], " ".join(context[1:]))] if context else []
    pending: str | None = None
    for entry in history:
        role, text = entry["role"], str(entry["text"])
        if role == "user":
            if pending is not None:
                result.append((pending, ""))
            pending = text
        elif role == "assistant":
            result.append((pending or "", text))
            pending = None
    if pending is not None:
        result.append((pending, ""))
    return result


_EPSILON = 1e-9  # F1 values equal up to float rounding count as the same


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a rewrite.jsonl, given the file or the folder holding it."""
    file = path / "rewrite.jsonl" if path.is_dir() else path
    return [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]


async def evaluate(path: Path, rewriter: Rewriter) -> RewriteScores:
    """Scores of `rewriter` on one rewrite.jsonl (or a folder holding one)."""
    rows = await asyncio.to_thread(read_rows, path)
    em, f1, id_em, id_f1, changed_f1, changed_id_f1 = [], [], [], [], [], []
    for row in rows:
        query, gold = str(row["query"]), str(row["gold_rewrite"])
        result = await rewriter.rewrite(query, rounds(row["history"]))
        em.append(exact_match(result.text, gold))
        f1.append(token_f1(result.text, gold))
        id_em.append(exact_match(query, gold))
        id_f1.append(token_f1(query, gold))
        if result.text != query:
            changed_f1.append(f1[-1])
            changed_id_f1.append(id_f1[-1])
    return RewriteScores(
        count=len(rows),
        exact_match=_mean(em),
        token_f1=_mean(f1),
        identity_exact_match=_mean(id_em),
        identity_token_f1=_mean(id_f1),
        changed=len(changed_f1),
        changed_f1=_mean(changed_f1),
        changed_identity_f1=_mean(changed_id_f1),
        up=sum(new > old + _EPSILON for new, old in zip(changed_f1, changed_id_f1, strict=True)),
        same=sum(abs(new - old) <= _EPSILON for new, old in zip(changed_f1, changed_id_f1, strict=True)),
        down=sum(new < old - _EPSILON for new, old in zip(changed_f1, changed_id_f1, strict=True)),
    )


def table(results: Sequence[tuple[str, RewriteScores]], name: str = "rules") -> str:
    """A markdown table with one row per set."""
    lines = [
        f"| set | n | identity EM | identity F1 | {name} EM | {name} F1 | changed "
        f"| F1 on changed: identity -> {name} | up / same / down |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, s in results:
        lines.append(
            f"| {label} | {s.count} | {s.identity_exact_match:.3f} | {s.identity_token_f1:.3f} | {s.exact_match:.3f} "
            f"| {s.token_f1:.3f} | {s.changed} | {s.changed_identity_f1:.3f} -> {s.changed_f1:.3f} "
            f"| {s.up} / {s.same} / {s.down} |"
        )
    return "\n".join(lines) + "\n"


async def _run(folders: Sequence[Path]) -> str:
    rewriter = RuleRewriter()
    return table([(folder.name, await evaluate(folder, rewriter)) for folder in folders])


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m rag.eval.rewrite_eval DIR...`: the rule rewriter and the identity baseline as a markdown table."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("folders", nargs="+", type=Path, help="folders holding rewrite.jsonl")
    args = parser.parse_args(argv)
    sys.stdout.write(asyncio.run(_run(args.folders)))


if __name__ == "__main__":
    main()
