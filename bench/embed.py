"""Local embedding throughput: texts/s at batch 64 for short texts and for 512-token passages.

Runs the product's OnnxEmbedder on real text from the SciFact eval set (claims as short texts,
abstracts concatenated to >= 512 word pieces as long texts). Long passages are measured as the
product runs them (truncated at 256 word pieces, as sentence-transformers does) and, side by
side in the same run, truncated at 512, to show what the truncation buys.

    .venv/bin/python -m bench.embed [--model-dir DIR] [--eval-dir DIR] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from bench.common import commit, machine, percentile
from rag.models.embedders import OnnxEmbedder

BATCH = 64
ROOT = Path(__file__).resolve().parent.parent


def _jsonl(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _short_texts(eval_dir: Path) -> list[str]:
    return [row["text"] for row in _jsonl(eval_dir / "scifact" / "queries.jsonl")][:BATCH]


def _long_texts(eval_dir: Path, words: int = 600) -> list[str]:
    corpus = [f"{row['title']} {row['text']}".split() for row in _jsonl(eval_dir / "scifact" / "corpus.jsonl")]
    stream = [word for document in corpus[:400] for word in document]
    return [" ".join(stream[i * words : (i + 1) * words]) for i in range(BATCH)]


def _measure(embedder: OnnxEmbedder, texts: list[str], repeats: int) -> dict[str, float]:
    embedder.embed_sync(texts)  # warm-up: first run allocates onnxruntime buffers
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        embedder.embed_sync(texts)
        seconds.append(time.perf_counter() - start)
    median = statistics.median(seconds)
    return {
        "batch_median_s": median,
        "batch_p95_s": percentile(seconds, 0.95),
        "texts_per_s": len(texts) / median,
    }


def main() -> None:
    """Measure and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=os.environ.get("EMBEDDING_MODEL_DIR"))
    parser.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    if args.model_dir is None:
        parser.error("--model-dir (or EMBEDDING_MODEL_DIR) is required")

    short, long = _short_texts(args.eval_dir), _long_texts(args.eval_dir)
    at_256 = OnnxEmbedder(args.model_dir, model_id="bench", max_tokens=256, batch_size=BATCH)
    at_512 = OnnxEmbedder(args.model_dir, model_id="bench", max_tokens=512, batch_size=BATCH)
    rows = [
        ("short (SciFact claims)", _measure(at_256, short, args.repeats)),
        ("long, truncated at 256 (product)", _measure(at_256, long, args.repeats)),
        ("long, truncated at 512", _measure(at_512, long, max(3, args.repeats // 3))),
    ]
    print(f"commit {commit()} · {machine()} · batch {BATCH} · {args.repeats} repeats\n")
    print("| texts | batch median (s) | batch p95 (s) | texts/s (median) |")
    print("| --- | ---: | ---: | ---: |")
    for name, result in rows:
        print(
            f"| {name} | {result['batch_median_s']:.3f} | {result['batch_p95_s']:.3f} | {result['texts_per_s']:.1f} |"
        )
    ratio = rows[1][1]["texts_per_s"] / rows[2][1]["texts_per_s"]
    print(f"\nTruncating long passages at 256 instead of 512 word pieces: {ratio:.2f}x the throughput.")


if __name__ == "__main__":
    main()
