"""The cost of issue 23's legs: the search pipeline with no leg, the web leg, the entity leg; DATA_ANALYSIS; rows kept.

One real setup: a local Weaviate and a SQLite store (bench.common.local_stack), the ONNX embedder, the local
reranker and the rule rewriter, the tables file (DuckDB) and the relational graph, as the product wires them. The
knowledge base holds SciFact abstracts and CMRC 2018 passages that answer the questions asked, and a generated CSV
price list, all ingested by the product's DocumentIngestor (the graph switched on first, so ingestion fills it; the
tables switched on, so the CSV's rows are kept). The web leg is built by the product's `build_web_leg` over
DuckDuckGo's fake (fakes/web_search/), which serves each question its own ten results, the first three with pages
that are read; the model is the fake OpenAI API (fakes/openai_api.py) through the openai client, writing the SQL.

Each question goes through every variant in turn, the order rotated from one question to the next, so the
machine's noise falls on all alike; ratios are to the no-leg run of the same questions. Questions are embedded
once before timing (every variant finds the vector in memory, as a question's second stage does in production),
and every question goes once through the pipelines without the web leg first, so that RERANK's per-chunk window
embeddings are in the cache for every variant alike (see `_warm`).
- corpus questions: `search` with no extra leg; with the web leg, the conversation's first search (provider,
  three page reads, the passages embedded) and its repeat (the passages ranked again, no request); with the
  entity leg (graph on).
- price-list questions: `search`, and `search` followed by DATA_ANALYSIS (the model's plan over HTTP, the table's
  schema read, the SQL checked and run read-only); DATA_ANALYSIS's own time is its stage report.
Keeping a sheet's rows, and making its DuckDB table on a process's first question, is bench/tables_cache.py's.

    .venv/bin/python -m bench.legs [--questions 60] [--sheet-questions 30] [--rows 3000] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import commit, local_stack, machine, parse_arguments, percentile
from bench.legs_material import Corpus, SheetQuestion, corpus, plan_reply, price_list, sheet_questions, web_answer
from bot.app.settings import Settings
from bot.app.web_search import build_web_leg, web_session
from fakes.openai_api import FakeOpenAI
from fakes.web_search.server import FakeWebSearch
from rag.config import ChatModelConfig
from rag.faq.search import FaqSearch
from rag.graph.index import GraphIndexer
from rag.graph.leg import EntitySearch, GraphSwitches
from rag.graph.question import RuleEntities
from rag.ingest.documents import DocumentIngestor, SourceFile
from rag.lexical import LexicalAnalyzer
from rag.models.chat import OpenAIChatModel
from rag.models.embedders import CachedEmbedder, OnnxEmbedder
from rag.models.rerankers import LocalReranker
from rag.named_pipelines import PipelineParts, search_pipeline
from rag.pipeline import Pipeline, TurnContext
from rag.retrieval import Retriever
from rag.rewrite_rules import RuleRewriter
from rag.stages.data_analysis import DataAnalysis, TableParts
from rag.tokens import TokenCounter
from rag.types import ChatMessage
from storage.db import Database
from storage.embedding_cache import SqlEmbeddingCache
from storage.repos.conversations import ConversationRepo
from storage.repos.documents import DocumentRepo
from storage.repos.faqs import FaqRepo
from storage.repos.graph import GraphRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.repos.merge_reads import MergeReadRepo
from storage.tables.records import QueryResult, TableConfig, TableSchema
from storage.tables.store import TableStore

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
WARM_UP = 2
BASELINE = "no extra leg"
WEB_FIRST, WEB_REPEAT, ENTITY = "web leg, first search", "web leg, repeat", "entity leg on"
SHEET_BASELINE, ANALYSED = "search (price-list question)", "search + DATA_ANALYSIS"
# The order the tables list the variants in.
_ORDER = (BASELINE, WEB_FIRST, WEB_REPEAT, ENTITY, SHEET_BASELINE, ANALYSED)


@dataclass(slots=True)
class Timings:
    """Per variant: each question's wall time (ms), SEARCH's and the measured stage's time, and its notes."""

    total: dict[str, list[float]] = field(default_factory=dict)
    stage: dict[str, list[float]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)
    # Per variant, every stage's times: where a leg's cost lands besides its own stage.
    stages: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    load: list[float] = field(default_factory=list)
    # DATA_ANALYSIS's parts: the model's plan, the schema read, the query.
    parts: dict[str, list[float]] = field(default_factory=dict)

    def add(self, variant: str, ms: float, turn: TurnContext, stage: str) -> None:
        """Record one run of `variant` and `stage`'s report in it."""
        self.total.setdefault(variant, []).append(ms)
        report = next((r for r in turn.reports if r.name == stage), None)
        self.stage.setdefault(variant, []).append(report.ms if report else 0.0)
        self.notes.setdefault(variant, []).append(report.note if report else "")
        for each in turn.reports:
            self.stages.setdefault(variant, {}).setdefault(each.name, []).append(each.ms)


@dataclass(frozen=True, slots=True)
class Result:
    """Everything measured, and the load average (1, 5, 15 min) before and after."""

    legs: Timings
    sheet: Timings
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]


class TimedTables(TableStore):
    """The tables file, the time of each schema read and query kept (DATA_ANALYSIS's parts)."""

    def __init__(self, config: TableConfig, db: Database, parts: dict[str, list[float]]) -> None:
        super().__init__(config, db)
        self._parts = parts

    async def schemas(self, document_ids: Sequence[str], kb_ids: Collection[str]) -> list[TableSchema]:
        started = time.perf_counter()
        try:
            return await super().schemas(document_ids, kb_ids)
        finally:
            self._parts.setdefault("schemas (DuckDB)", []).append((time.perf_counter() - started) * 1000)

    async def run(self, sql: str, kb_ids: Collection[str]) -> QueryResult:
        started = time.perf_counter()
        try:
            return await super().run(sql, kb_ids)
        finally:
            self._parts.setdefault("query (DuckDB)", []).append((time.perf_counter() - started) * 1000)


class TimedModel(OpenAIChatModel):
    """The openai client against the fake, the time of each plan asked for kept."""

    def __init__(self, config: ChatModelConfig, parts: dict[str, list[float]]) -> None:
        super().__init__(config)
        self._parts = parts

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        started = time.perf_counter()
        try:
            return await super().complete(messages)
        finally:
            self._parts.setdefault("plan (fake model, HTTP)", []).append((time.perf_counter() - started) * 1000)


Run = Callable[[], Awaitable[tuple[float, TurnContext]]]


async def _timed(pipeline: Pipeline, turn: TurnContext) -> tuple[float, TurnContext]:
    started = time.perf_counter()
    done = await pipeline.run(turn)
    return (time.perf_counter() - started) * 1000, done


async def _interleaved(
    blocks: Sequence[Sequence[tuple[str, Run]]], number: int, timings: Timings | None, stage: str
) -> None:
    """Run the blocks (variants that must follow each other) starting at a different one for each question."""
    shift = number % len(blocks)
    for block in [*blocks[shift:], *blocks[:shift]]:
        for variant, run in block:
            ms, turn = await run()
            if timings is not None:
                timings.add(variant, ms, turn, stage)
    if timings is not None:
        timings.load.append(os.getloadavg()[0])


@dataclass(frozen=True, slots=True)
class Setup:
    """The pipelines of each variant, the knowledge base and the fakes they talk to."""

    kb_id: str
    plain: Pipeline
    web: Pipeline
    entity: Pipeline
    analysed: Pipeline
    fake_web: FakeWebSearch
    tables: TableStore


async def _warm(pipelines: Sequence[Pipeline], questions: Sequence[str], kb_id: str) -> None:
    """Every question through these pipelines once, untimed: RERANK embeds the windows of each chunk it meets the
    first time and keeps them in the embedding cache, so without this a question's first variant alone
    would pay for them (130-440 ms here), whichever it is. The figures are of a knowledge base asked before."""
    for question in questions:
        for pipeline in pipelines:
            await pipeline.run(TurnContext(query=question, kb_ids=(kb_id,)))


async def _corpus_questions(setup: Setup, material: Corpus, timings: Timings) -> None:
    await _warm((setup.plain, setup.entity), material.questions, setup.kb_id)
    for number, question in enumerate(material.questions):
        answer = web_answer(number, material.elsewhere, setup.fake_web.page_url)
        setup.fake_web.serve(answer.hits)
        for name, markup in answer.pages.items():
            setup.fake_web.serve_page(name, markup)
        scope = f"bench-{number}"

        def turn(*, web: bool = False, question: str = question, scope: str = scope) -> TurnContext:
            return TurnContext(query=question, kb_ids=(setup.kb_id,), web_search=web, web_scope=scope)

        blocks: list[list[tuple[str, Run]]] = [
            [(BASELINE, lambda: _timed(setup.plain, turn()))],
            [
                (WEB_FIRST, lambda: _timed(setup.web, turn(web=True))),
                (WEB_REPEAT, lambda: _timed(setup.web, turn(web=True))),
            ],
            [(ENTITY, lambda: _timed(setup.entity, turn()))],
        ]
        await _interleaved(blocks, number, timings if number >= WARM_UP else None, "SEARCH")


async def _sheet_questions(setup: Setup, questions: Sequence[SheetQuestion], timings: Timings) -> None:
    await _warm((setup.plain,), [question.text for question in questions], setup.kb_id)
    for number, question in enumerate(questions):

        def turn(question: str = question.text) -> TurnContext:
            return TurnContext(query=question, kb_ids=(setup.kb_id,))

        blocks: list[list[tuple[str, Run]]] = [
            [(SHEET_BASELINE, lambda: _timed(setup.plain, turn()))],
            [(ANALYSED, lambda: _timed(setup.analysed, turn()))],
        ]
        await _interleaved(blocks, number, timings if number >= WARM_UP else None, "DATA_ANALYSIS")


def _web_settings(fake: FakeWebSearch) -> Settings:
    # The product's defaults but for the provider's addresses; the fake's pages are on the loopback.
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        WEB_SEARCH_PROVIDER="duckduckgo",
        WEB_SEARCH_DUCKDUCKGO_URL=fake.html_url,
        WEB_SEARCH_DUCKDUCKGO_API_URL=fake.instant_answer_url,
        URL_FETCH_ALLOWED_NETWORKS="127.0.0.0/8",
    )


async def _run(args: argparse.Namespace) -> Result:
    material = corpus(args.eval_dir, args.questions + WARM_UP)
    asked = sheet_questions(args.sheet_questions + WARM_UP)
    work = Path(tempfile.mkdtemp(prefix="ragbot-bench-legs-"))
    load_before = os.getloadavg()
    async with (
        local_stack(args.weaviate_binary, "ragbot-bench-legs-") as (store, db),
        FakeWebSearch() as fake_web,
        FakeOpenAI() as fake_model,
        web_session() as session,
    ):
        fake_model.reply_for = plan_reply(asked, "An answer.")
        legs, sheet = Timings(), Timings()
        model = TimedModel(ChatModelConfig(model="fake", base_url=fake_model.base_url, api_key="test-key"), sheet.parts)
        cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR")
        tokens = TokenCounter("cl100k_base", Path(cache_dir) if cache_dir else None)
        lexical = LexicalAnalyzer()
        embedder = CachedEmbedder(OnnxEmbedder(args.model_dir, model_id=MODEL_ID), SqlEmbeddingCache(db))
        documents, faqs, kbs, graph = DocumentRepo(db), FaqRepo(db), KnowledgeBaseRepo(db), GraphRepo(db)
        tables = TimedTables(TableConfig(path=work / "tables.duckdb"), db, sheet.parts)
        switches = GraphSwitches(graph)
        kb = await kbs.create("bench", chunking={})
        await switches.switch(kb.id, enabled=True)
        await kbs.set_tables(kb.id, True)
        ingestor = DocumentIngestor(
            documents, store, embedder, lexical, tokens.encoding, tables=tables, graph=GraphIndexer(graph)
        )
        started = time.perf_counter()
        for name, text in material.documents:
            await ingestor.ingest(kb, SourceFile(text.encode(), source_uri=f"bench:{name}", filename=name))
        prices = await ingestor.ingest(
            kb, SourceFile(price_list(args.rows), source_uri="bench:prices.csv", filename="prices.csv")
        )
        print(
            f"ingested {len(material.documents)} passages and a {args.rows}-row price list "
            f"({prices.chunks} chunks) in {time.perf_counter() - started:.0f} s",
            flush=True,
        )
        retriever = Retriever(store, embedder, lexical, documents, faqs, questions=embedder.transient)
        await embedder.transient.embed([*material.questions, *(q.text for q in asked)], kind="query")
        parts = PipelineParts(
            retriever=retriever,
            faqs=FaqSearch(store, faqs, lexical, embedder),
            history=ConversationRepo(db),
            merge_source=MergeReadRepo(db),
            tokens=tokens,
            rewriter=RuleRewriter(),
            reranker=LocalReranker(embedder, lexical),
            model=model,
        )
        web_leg = build_web_leg(_web_settings(fake_web), session, embedder.transient, lexical)
        assert web_leg is not None
        plain = search_pipeline(parts)
        setup = Setup(
            kb_id=kb.id,
            plain=plain,
            web=search_pipeline(dataclasses.replace(parts, legs=(web_leg,))),
            entity=search_pipeline(
                dataclasses.replace(parts, legs=(EntitySearch(graph, retriever, RuleEntities(), switches=switches),))
            ),
            analysed=Pipeline("search", [*plain.stages, DataAnalysis(model, TableParts(tables, kbs))]),
            fake_web=fake_web,
            tables=tables,
        )
        try:
            await _corpus_questions(setup, material, legs)
            print(f"corpus questions done ({len(material.questions) - WARM_UP} measured)", flush=True)
            await _sheet_questions(setup, asked, sheet)
            print(f"price-list questions done ({len(asked) - WARM_UP} measured)", flush=True)
        finally:
            await model.close()
    return Result(legs, sheet, load_before, os.getloadavg())


def _leg_counts(notes: list[str], leg: str) -> str:
    counts = [int(part.split("=")[1]) for note in notes for part in note.split() if part.startswith(f"{leg}=")]
    if not counts:
        return ""
    return f"{statistics.median(counts):g} (none for {sum(c == 0 for c in counts)} of {len(counts)})"


def _variant_table(timings: Timings, baseline: str, stage: str, extra: Callable[[str], str]) -> list[str]:
    lines = [
        f"| variant | runs | median ms | p95 ms | ratio of medians | median of per-question ratios | "
        f"{stage} median ms | {stage} p95 ms | notes |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    base = timings.total[baseline]
    for variant, values in sorted(timings.total.items(), key=lambda item: _ORDER.index(item[0])):
        ratios = [value / first for value, first in zip(values, base, strict=True)]
        stages = timings.stage[variant]
        lines.append(
            f"| {variant} | {len(values)} | {statistics.median(values):.1f} | {percentile(values, 0.95):.1f} | "
            f"{statistics.median(values) / statistics.median(base):.2f} | {statistics.median(ratios):.2f} | "
            f"{statistics.median(stages):.1f} | {percentile(stages, 0.95):.1f} | {extra(variant)} |"
        )
    return lines


def _stage_table(timings: Timings) -> list[str]:
    names = list(next(iter(timings.stages.values())))
    lines = ["| variant | " + " | ".join(names) + " |", "| --- | " + " | ".join("---:" for _ in names) + " |"]
    for variant, stages in sorted(timings.stages.items(), key=lambda item: _ORDER.index(item[0])):
        cells = [f"{statistics.median(stages[name]):.1f}" if name in stages else "" for name in names]
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    return lines


def _report(result: Result, args: argparse.Namespace) -> None:
    legs, sheet, before, after = result.legs, result.sheet, result.load_before, result.load_after
    loads = legs.load + sheet.load
    print(f"\ncommit {commit()} · {machine()}")
    print(
        f"load average (1, 5, 15 min) before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, after "
        f"{after[0]:.2f} {after[1]:.2f} {after[2]:.2f}; 1-min load after each question: min {min(loads):.2f}, "
        f"median {statistics.median(loads):.2f}, max {max(loads):.2f}\n"
    )

    def leg_notes(variant: str) -> str:
        notes = legs.notes[variant]
        web, graph = _leg_counts(notes, "web"), _leg_counts(notes, "graph")
        if web:
            return f"web candidates {web}"
        if not graph:
            return ""
        # The leg's cost where the question named something the graph holds, against the same questions' no-leg run.
        found = [
            value / first
            for value, first, note in zip(legs.total[variant], legs.total[BASELINE], notes, strict=True)
            if "graph=" in note and "graph=0" not in note.split()
        ]
        where = f"; median ratio {statistics.median(found):.2f} where it found some" if found else ""
        return f"graph candidates {graph}{where}"

    print("Corpus questions (SciFact and CMRC 2018 in turn), the search pipeline; SEARCH is the stage:\n")
    print("\n".join(_variant_table(legs, BASELINE, "SEARCH", leg_notes)))

    def sheet_notes(variant: str) -> str:
        notes = sheet.notes[variant]
        ran = sum(note.startswith("rows=") for note in notes)
        return f"SQL run for {ran} of {len(notes)}" if variant != SHEET_BASELINE else ""

    print("\nStage medians (ms), corpus questions:\n")
    print("\n".join(_stage_table(legs)))
    print("\nPrice-list questions (count with a filter, group-by, sum with a filter in turn):\n")
    print("\n".join(_variant_table(sheet, SHEET_BASELINE, "DATA_ANALYSIS", sheet_notes)))
    print("\nDATA_ANALYSIS's parts (each call, warm-up left out):\n")
    print("| part | calls | median ms | p95 ms |\n| --- | ---: | ---: | ---: |")
    for part, values in sheet.parts.items():
        kept = values[WARM_UP:]
        print(f"| {part} | {len(kept)} | {statistics.median(kept):.1f} | {percentile(kept, 0.95):.1f} |")


def main() -> None:
    """Measure and print markdown tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=60, help="corpus questions measured")
    parser.add_argument("--sheet-questions", type=int, default=30, help="price-list questions measured")
    parser.add_argument("--rows", type=int, default=3000, help="rows of the price list in the knowledge base")
    parser.add_argument("--quick", action="store_true", help="a smoke run of under a minute: few of everything")
    args = parse_arguments(parser)
    if args.quick:
        args.questions, args.sheet_questions, args.rows = 3, 3, 200
    result = asyncio.run(_run(args))
    _report(result, args)


if __name__ == "__main__":
    main()
