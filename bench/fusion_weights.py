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
    print(f"### {folder.name}\n\n| vector weight | bm25 weight | score |\n| ---: | ---: | ---: |", flush=True)
    base = retriever_for(services)
    if (folder / "corpus.jsonl").exists():
        async with retrieval_set(services, folder, sys.stderr) as prepared:
            for vector, bm25 in GRID:
                [scores] = await prepared.score(_with_weights(base, vector, bm25), ["rrf"])
                print(f"| {vector} | {bm25} | {scores.ndcg_10:.3f} (nDCG@10) |", flush=True)
    else:
        async with faq_set(services, folder) as faq:
            for vector, bm25 in GRID:
                [hits] = await faq.score(_with_weights(base, vector, bm25), ["rrf"])
                print(f"| {vector} | {bm25} | {hits.top1:.3f} (hit@1) |", flush=True)
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
