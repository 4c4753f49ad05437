"""Choose RRF leg weights on the DEV sets: ingest each set once, score a grid of weights, print tables.

Weights are (vector, bm25). Retrieval sets report nDCG@10, FAQ sets hit@1. The product's defaults
in rag/retrieval.py (FusionWeights) were chosen from this output; run it again after changing the
embedder or the tokenizer.

    RAGBOT_DATA_DIR=/tmp/ragbot-eval .venv/bin/python -m bench.fusion_weights DIR...
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from pathlib import Path

from bench.common import commit, machine
from bot.eval_cli import faq_set, retrieval_set, retriever_for
from bot.services import Services, build_services
from bot.settings import Settings
from rag.faq.search import FaqSearch
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


async def _sweep(services: Services, folder: Path) -> None:
    base = retriever_for(services)
    if (folder / "corpus.jsonl").exists():
        print(f"### {folder.name}\n\n| vector weight | bm25 weight | nDCG@10 |\n| ---: | ---: | ---: |", flush=True)
        async with retrieval_set(services, folder, sys.stderr) as prepared:
            for vector, bm25 in GRID:
                ranker = prepared.ranker(_with_weights(base, vector, bm25), "rrf")
                [scores] = await prepared.score({"rrf": ranker})
                print(f"| {vector} | {bm25} | {scores.ndcg_10:.3f} |", flush=True)
    else:
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
                print(f"| {vector} | {bm25} | {ranked.top1:.3f} | {product.top1:.3f} | {negative_first} |", flush=True)
    print()


async def _main(folders: list[Path]) -> None:
    print(f"commit {commit()} · {machine()}\n")
    async with build_services(Settings()) as services:
        for folder in folders:
            await _sweep(services, folder)


def main() -> None:
    """Sweep the grid over each folder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    asyncio.run(_main(parser.parse_args().folders))


if __name__ == "__main__":
    main()
