"""Splitter speed: our split_recursive against langchain's RecursiveCharacterTextSplitter on SciFact.

Both split every SciFact document (title and abstract) with the same separators (DEFAULT_SEPARATORS,
kept at the end of their piece), size and overlap: 500/50 characters, and 256/25 cl100k_base tokens.
Ours counts tokens with token_length() (the product's cached counter); langchain gets the plain count
(len of tiktoken's encode_ordinary, what from_tiktoken_encoder does), and, as a control that shows
what the cache alone is worth, our token_length too. Passes alternate (ours, theirs, ours, ...) so
both see the same machine noise.

    TIKTOKEN_CACHE_DIR=../shared/tiktoken .venv/bin/python -m bench.split [--eval-dir DIR] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import tiktoken
from langchain_text_splitters import RecursiveCharacterTextSplitter

from bench.common import commit, machine, percentile
from rag.ingest.split.separators import DEFAULT_SEPARATORS, split_recursive, token_length
from rag.ingest.types import LengthFunction, TextChunk

ROOT = Path(__file__).resolve().parent.parent

# Each returns what the library returns: TextChunks with offsets for ours, strings for langchain.
Splitter = Callable[[str], Sequence[TextChunk | str]]


def _documents(eval_dir: Path) -> list[str]:
    lines = (eval_dir / "scifact" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    return [f"{row['title']}\n\n{row['text']}" for row in rows]


def _ours(max_size: int, overlap: int, length: LengthFunction) -> Splitter:
    def split(text: str) -> list[TextChunk]:
        return split_recursive(text, max_size=max_size, overlap=overlap, length=length)

    return split


def _theirs(max_size: int, overlap: int, length: LengthFunction) -> Splitter:
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=max_size,
        chunk_overlap=overlap,
        length_function=length,
        separators=list(DEFAULT_SEPARATORS),
        keep_separator="end",
    )
    return splitter.split_text


def _seconds(split: Splitter, documents: list[str]) -> float:
    """Seconds to split every document, one at a time, as ingestion does (each result then dropped)."""
    start = time.perf_counter()
    for document in documents:
        split(document)
    return time.perf_counter() - start


def _texts(split: Splitter, documents: list[str]) -> list[list[str]]:
    """The chunk texts of each document (untimed)."""
    return [[chunk if isinstance(chunk, str) else chunk.text for chunk in split(document)] for document in documents]


def _compare(
    splitters: dict[str, Splitter], documents: list[str], repeats: int, length: LengthFunction
) -> dict[str, dict[str, float]]:
    """Interleaved passes over the corpus; throughput and chunk sizes (in `length` units) per splitter."""
    seconds: dict[str, list[float]] = {name: [] for name in splitters}
    chunks: dict[str, list[list[str]]] = {}
    for split in splitters.values():  # warm-up: imports, regex compilation, allocator
        _seconds(split, documents[:50])
    for _ in range(repeats):
        for name, split in splitters.items():
            seconds[name].append(_seconds(split, documents))
    for name, split in splitters.items():
        chunks[name] = _texts(split, documents)
    characters = sum(map(len, documents))
    first = next(iter(splitters))
    results = {}
    for name in splitters:
        median, slow = statistics.median(seconds[name]), percentile(seconds[name], 0.95)
        sizes = sorted(length(chunk) for document in chunks[name] for chunk in document)
        same = sum(ours == theirs for ours, theirs in zip(chunks[first], chunks[name], strict=True))
        results[name] = {
            "same_as_first": same,
            "chunks_s": len(sizes) / median,
            "chunks_s_p95": len(sizes) / slow,
            "chars_s": characters / median,
            "chars_s_p95": characters / slow,
            "min": sizes[0],
            "p10": percentile(sizes, 0.10),
            "median": percentile(sizes, 0.5),
            "p90": percentile(sizes, 0.90),
            "max": sizes[-1],
            "count": len(sizes),
        }
    return results


def main() -> None:
    """Measure and print markdown tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    parser.add_argument("--repeats", type=int, default=9, help="passes per splitter with character length")
    parser.add_argument("--token-repeats", type=int, default=5, help="passes per splitter with token length")
    args = parser.parse_args()

    documents = _documents(args.eval_dir)
    encoding = tiktoken.get_encoding("cl100k_base")
    encode = encoding.encode_ordinary

    def plain_tokens(text: str) -> int:
        return len(encode(text))

    def cached_tokens() -> LengthFunction:
        return token_length(encoding)  # a fresh cache for each splitter: neither warms the other's

    tables = [
        (
            "500 characters, overlap 50",
            len,
            _compare({"ours": _ours(500, 50, len), "langchain": _theirs(500, 50, len)}, documents, args.repeats, len),
        ),
        (
            "256 cl100k_base tokens, overlap 25",
            plain_tokens,
            _compare(
                {
                    "ours (token_length)": _ours(256, 25, cached_tokens()),
                    "langchain (plain count)": _theirs(256, 25, plain_tokens),
                    "langchain + our token_length (control)": _theirs(256, 25, cached_tokens()),
                },
                documents,
                args.token_repeats,
                plain_tokens,
            ),
        ),
    ]
    characters = sum(map(len, documents))
    print(
        f"commit {commit()} · {machine()} · SciFact corpus: {len(documents)} documents, "
        f"{characters / 1e6:.2f} M characters · {args.repeats} passes (characters), "
        f"{args.token_repeats} passes (tokens), interleaved\n"
    )
    for title, _, results in tables:
        print(f"**{title}**\n")
        print("| splitter | chunks/s median | chunks/s p95 | M chars/s median | M chars/s p95 |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for name, r in results.items():
            print(
                f"| {name} | {r['chunks_s']:,.0f} | {r['chunks_s_p95']:,.0f} | "
                f"{r['chars_s'] / 1e6:.2f} | {r['chars_s_p95'] / 1e6:.2f} |"
            )
        names = list(results)
        ratio = results[names[0]]["chars_s"] / results[names[1]]["chars_s"]
        same = results[names[1]]["same_as_first"]
        print(f"\nours / langchain (median chars/s): **{ratio:.2f}x**")
        print(f"Documents split into exactly the same chunks by both: {same:.0f} of {len(documents)}\n")
        print("| chunk size | min | p10 | median | p90 | max | count |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name, r in results.items():
            print(
                f"| {name} | {r['min']:.0f} | {r['p10']:.0f} | {r['median']:.0f} | {r['p90']:.0f} | "
                f"{r['max']:.0f} | {r['count']:.0f} |"
            )
        print()


if __name__ == "__main__":
    main()
