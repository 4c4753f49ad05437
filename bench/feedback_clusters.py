"""Feedback clusters: how well `rag.clusters` groups questions that ask the same thing, and how long it takes.

Quality: StackFAQ DEV paraphrases (625 questions, each labelled with the FAQ it asks; 125 FAQs) embedded by the
product's OnnxEmbedder as queries and clustered at several thresholds. Purity: the share of questions whose group's
most common FAQ is their own (groups mix nothing at 1.0). Completeness: the share of questions in the group holding
most of their FAQ's questions (nothing split at 1.0). Groups: against the 125 FAQs asked.
Time: clustering 1k and 10k real short texts (SciFact titles and claims), medians and p95 of repeats.

    .venv/bin/python -m bench.feedback_clusters [--model-dir DIR] [--eval-dir DIR] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from pathlib import Path

from bench.common import commit, machine, parse_arguments, percentile
from rag.clusters import SAME_QUESTION, Cluster, cluster_by_meaning
from rag.models.embedders import OnnxEmbedder
from rag.types import Vector

THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)


def _jsonl(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _scores(clusters: list[Cluster], labels: list[str]) -> tuple[float, float]:
    """(purity, completeness) of `clusters` against the gold `labels`."""
    pure = sum(Counter(labels[i] for i in cluster.members).most_common(1)[0][1] for cluster in clusters)
    holding: dict[str, Counter[int]] = {}
    for number, cluster in enumerate(clusters):
        for i in cluster.members:
            holding.setdefault(labels[i], Counter())[number] += 1
    complete = sum(counts.most_common(1)[0][1] for counts in holding.values())
    return pure / len(labels), complete / len(labels)


def _timed(vectors: list[Vector], repeats: int) -> tuple[float, float, int]:
    times = []
    groups = 0
    for _ in range(repeats):
        start = time.perf_counter()
        groups = len(cluster_by_meaning(vectors))
        times.append(time.perf_counter() - start)
    return statistics.median(times), percentile(times, 0.95), groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parse_arguments(parser)
    embedder = OnnxEmbedder(args.model_dir, model_id="bench", max_tokens=256, batch_size=64)

    rows = _jsonl(args.eval_dir / "stackfaq" / "queries.jsonl")
    labels = [row["faq_id"] for row in rows]
    vectors = embedder.embed_sync([row["text"] for row in rows], kind="query")
    print(f"commit {commit()} · {machine()} · {len(rows)} StackFAQ DEV questions, {len(set(labels))} FAQs\n")
    print("| threshold | groups | purity | completeness | groups of 1 |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for threshold in THRESHOLDS:
        clusters = cluster_by_meaning(vectors, threshold)
        purity, completeness = _scores(clusters, labels)
        single = sum(cluster.size == 1 for cluster in clusters)
        mark = " (default)" if threshold == SAME_QUESTION else ""
        print(f"| {threshold}{mark} | {len(clusters)} | {purity:.3f} | {completeness:.3f} | {single} |")

    scifact = args.eval_dir / "scifact"
    texts = [row["title"] for row in _jsonl(scifact / "corpus.jsonl")]
    texts += [row["text"] for row in _jsonl(scifact / "queries.jsonl")]
    texts += [row["text"].split(". ")[0] for row in _jsonl(scifact / "corpus.jsonl")]
    pool = embedder.embed_sync(texts[:10_000], kind="query")
    print(f"\nTime at threshold {SAME_QUESTION} ({args.repeats} repeats; SciFact titles, claims, first sentences):\n")
    print("| questions | median (s) | p95 (s) | groups |")
    print("| ---: | ---: | ---: | ---: |")
    for size in (1_000, 10_000):
        median, p95, groups = _timed(pool[:size], args.repeats if size <= 1_000 else max(1, args.repeats // 2))
        print(f"| {size:,} | {median:.3f} | {p95:.3f} | {groups:,} |")


if __name__ == "__main__":
    main()
