"""Choose RRF leg weights on the DEV sets: ingest each set once, score a grid of weights, print tables.

Weights are (vector, bm25). Retrieval sets report nDCG@10, FAQ sets hit@1 (the product's FAQ search). The
product's defaults in rag/retrieval.py (FusionWeights) were chosen from this output; run it again after changing
the embedder or the tokenizer. It ends with the `FUSION_WEIGHTS=` line for .env that holds the best weights of
each kind (chunks: retrieval sets, faqs: FAQ sets) and language (the sets' queries'), averaged over the sets.

    RAGBOT_DATA_DIR=/tmp/ragbot-eval .venv/bin/python -m bench.fusion_weights DIR...
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.common import commit, machine
from bot.app.services import Services, build_services
from bot.app.settings import Settings
from bot.cli.evaluate import faq_set, retrieval_set, retriever_for
from rag.faq.search import FaqSearch
from rag.language import Language, language_of
from rag.retrieval import FusionWeights, Retriever

GRID = [
    (1.0, 0.0),
    (1.0, 0.1),
    (1.0, 0.2),
    (1.0, 0.3),
    (1.0, 0.5),
    (1.0, 1.0),
    (0.5, 1.0),
    (0.3, 1.0),
    (0.2, 1.0),
    (0.1, 1.0),
    (0.0, 1.0),
]


def _with_weights(base: Retriever, vector: float, bm25: float) -> Retriever:
    legs = {"vector": vector, "bm25": bm25}
    weights = FusionWeights(chunks={"zh": legs, "en": legs}, faqs={"zh": legs, "en": legs})
    return base.with_config(dataclasses.replace(base.config, weights=weights))


Scores = dict[tuple[float, float], float]


def _language(folder: Path) -> Language:
    """The language most of a set's queries are in."""
    queries = [json.loads(line)["text"] for line in (folder / "queries.jsonl").read_text().splitlines() if line]
    return Counter(language_of(query) for query in queries).most_common(1)[0][0]


def settings_line(best: Mapping[tuple[str, Language], Sequence[Scores]]) -> str:
    """The FUSION_WEIGHTS line: per kind and language, the grid point with the best mean score over its sets."""
    table: dict[str, dict[str, dict[str, float]]] = {}
    for (kind, language), runs in sorted(best.items()):
        vector, bm25 = max(GRID, key=lambda point: statistics.mean(run[point] for run in runs))
        table.setdefault(kind, {})[language] = {"vector": vector, "bm25": bm25}
    return "FUSION_WEIGHTS=" + json.dumps(table, separators=(",", ":"))


async def _sweep(services: Services, folder: Path) -> tuple[str, Scores]:
    """Print the set's table; returns what it sweeps (chunks or faqs) and the score of each grid point."""
    base = retriever_for(services)
    scored: Scores = {}
    if (folder / "corpus.jsonl").exists():
        print(f"### {folder.name}\n\n| vector weight | bm25 weight | nDCG@10 |\n| ---: | ---: | ---: |", flush=True)
        async with retrieval_set(services, folder, sys.stderr) as prepared:
            for vector, bm25 in GRID:
                ranker = prepared.ranker(_with_weights(base, vector, bm25), "rrf")
                [scores] = await prepared.score({"rrf": ranker})
                scored[vector, bm25] = scores.ndcg_10
                print(f"| {vector} | {bm25} | {scores.ndcg_10:.3f} |", flush=True)
        print()
        return "chunks", scored
    print(
        f"### {folder.name}\n\n| vector weight | bm25 weight | hit@1 (ranked variants) | hit@1 (FAQ search) "
        "| negative first (FAQ search) |\n| ---: | ---: | ---: | ---: | ---: |",
        flush=True,
    )
    async with faq_set(services, folder) as faq:
        for vector, bm25 in GRID:
            retriever = _with_weights(base, vector, bm25)
            legs = {"vector": vector, "bm25": bm25}
            search = FaqSearch(
                services.store,
                services.faqs,
                services.lexical,
                services.embedder,
                dataclasses.replace(services.settings.faq_search(), weights={"zh": legs, "en": legs}),
            )
            ranked, product = await faq.score(
                {"rrf": faq.ranker(retriever, "rrf"), "faq search": faq.product_ranker(retriever, search)}, 1.0
            )
            negative_first = f"{product.negative_top1_rate:.1%}"
            scored[vector, bm25] = product.top1
            print(f"| {vector} | {bm25} | {ranked.top1:.3f} | {product.top1:.3f} | {negative_first} |", flush=True)
    print()
    return "faqs", scored


async def _main(folders: list[Path]) -> None:
    print(f"commit {commit()} · {machine()}\n")
    best: dict[tuple[str, Language], list[Scores]] = {}
    async with build_services(Settings()) as services:
        for folder in folders:
            kind, scored = await _sweep(services, folder)
            best.setdefault((kind, _language(folder)), []).append(scored)
    print("The best weights of these sets, for .env (then check them with `ragbot eval`):\n")
    print(settings_line(best))


def main() -> None:
    """Sweep the grid over each folder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    asyncio.run(_main(parser.parse_args().folders))


if __name__ == "__main__":
    main()
