"""CPU per turn outside the model's own stream, by stage, and the web route's SSE framing of a 120-delta answer.

`rag_stream` runs for real over a small knowledge base ingested by the product's own ingestors (SciFact abstracts,
CMRC 2018 passages, the concurrency benchmarks' VPN page, StackFAQ and BQ FAQs) on a local Weaviate, a SQLite
store, the ONNX embedder (query embedding included), the local reranker and the rule rewriter. The model is an
in-process stub of our ChatModel protocol that yields 120 one-word deltas; its own CPU is measured alone and taken
off. Turns run one at a time, so the process's CPU (time.process_time: every thread, ONNX's and jieba's workers
included) during a stage is that stage's. Questions are new each turn (as in bench/concurrency.py, a ticket number
or another labelled question), English and Chinese, a quarter of them follow-ups in a stored conversation.

The web route: WebChat's real /api/messages route and WebReplyStream on a local aiohttp server in a thread of its own
(its thread's CPU clock is read), behind a stand-in manager that pushes 120 deltas and the final; an aiohttp client
in the main thread posts and reads the events. Each part is CPU milliseconds per turn (mean; CPU adds up).

Before and after in one invocation: `--before DIR` (a copy of the older tree, e.g. `git archive OLD | tar -x -C
DIR`) runs this same script there and here in alternating child processes and prints both side by side.

    .venv/bin/python -m bench.turn_cpu [--turns 200] [--rounds 2] [--before DIR] [--profile PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import cProfile
import io
import json
import os
import pstats
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bench.common import ROOT, commit, local_stack, machine, parse_arguments
from rag.faq.search import FaqSearch
from rag.ingest.documents import DocumentIngestor, SourceFile
from rag.ingest.faq_index import FaqImporter
from rag.ingest.faq_sheet import FaqEntry
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import CachedEmbedder, OnnxEmbedder
from rag.models.rerankers import LocalReranker
from rag.named_pipelines import PipelineParts, rag_stream
from rag.pipeline import Pipeline, Stage, TurnContext
from rag.ports import EmbedKind
from rag.retrieval import Retriever
from rag.rewrite_rules import RuleRewriter
from rag.tokens import TokenCounter
from rag.types import ChatMessage, Vector
from storage.embedding_cache import SqlEmbeddingCache
from storage.repos.conversations import ConversationRepo
from storage.repos.documents import DocumentRepo
from storage.repos.faqs import FaqRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.repos.merge_reads import MergeReadRepo

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DELTAS = 120
WARM_UP = 20
VPN_PAGE = (
    "# VPN client\n\nThe VPN client is installed from the Software Center app on your laptop. Open the Software "
    "Center, search for VPN and press Install. Sign in with your company account when the client first starts.\n"
)
_WORDS = tuple(dict.fromkeys(VPN_PAGE.lower().replace(".", " ").replace(",", " ").split()[3:]))


def _answer_deltas(seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(_WORDS)} " for _ in range(DELTAS)]


class StubModel:
    """Our ChatModel protocol, cheaply: 120 one-word deltas, the event loop given a turn between them."""

    model_id = "stub"

    def __init__(self) -> None:
        self._answers = [_answer_deltas(seed) for seed in range(16)]
        self._next = 0

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        return "".join(self._answers[0])

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        self._next += 1
        for delta in self._answers[self._next % len(self._answers)]:
            await asyncio.sleep(0)
            yield delta


class CpuStage:
    """A stage whose process CPU time is added to `cpu[name]`."""

    def __init__(self, stage: Stage, cpu: dict[str, float]) -> None:
        self.name = stage.name
        self._stage = stage
        self._cpu = cpu

    async def run(self, turn: TurnContext) -> str:
        started = time.process_time()
        try:
            return await self._stage.run(turn)
        finally:
            self._cpu[self.name] = self._cpu.get(self.name, 0.0) + time.process_time() - started


class CpuEmbedder:
    """The ONNX embedder, the process CPU of each call added to `cpu["embedding <kind>"]` (calls are awaited alone)."""

    def __init__(self, inner: OnnxEmbedder, cpu: dict[str, float]) -> None:
        self._inner = inner
        self._cpu = cpu
        self.provider = inner.provider
        self.model_id = inner.model_id
        self.dimension = inner.dimension

    def prompt(self, kind: EmbedKind) -> str:
        return self._inner.prompt(kind)

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        started = time.process_time()
        try:
            return await self._inner.embed(texts, kind=kind)
        finally:
            name = f"· embedding ({'the question' if kind == 'query' else 'passages, windows'}, ONNX)"
            self._cpu[name] = self._cpu.get(name, 0.0) + time.process_time() - started


class CpuLexical(LexicalAnalyzer):
    """The analyzer, the CPU of the thread cutting each text with jieba added to `cpu`."""

    def __init__(self, cpu: dict[str, float]) -> None:
        super().__init__()
        self._cpu = cpu
        self._cpu_lock = threading.Lock()

    def _cut(self, text: str, stem: Callable[[str], str]) -> list[str]:
        started = time.thread_time()
        try:
            return super()._cut(text, stem)
        finally:
            with self._cpu_lock:
                name = "· jieba cutting (all stages)"
                self._cpu[name] = self._cpu.get(name, 0.0) + time.thread_time() - started


class InlineExecutor(concurrent.futures.ThreadPoolExecutor):
    """Runs `asyncio.to_thread` work at once on the loop's thread, so that cProfile sees it (profiling only)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


# --- the knowledge base and the questions -------------------------------------------------------------------------


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class Material:
    """What is ingested and what is asked, from the shared evaluation sets."""

    def __init__(self, eval_dir: Path, turns: int) -> None:
        per_kind = turns // 6 + WARM_UP
        scifact_queries = _jsonl(eval_dir / "scifact" / "queries.jsonl")[:per_kind]
        wanted = {row["doc_id"] for row in _jsonl(eval_dir / "scifact" / "qrels.jsonl")}
        scifact_docs = [row for row in _jsonl(eval_dir / "scifact" / "corpus.jsonl") if row["id"] in wanted][:60]
        cmrc_queries = _jsonl(eval_dir / "cmrc2018" / "queries.jsonl")[:per_kind]
        cmrc_wanted = {row["query_id"]: row["doc_id"] for row in _jsonl(eval_dir / "cmrc2018" / "qrels.jsonl")}
        cmrc_ids = {cmrc_wanted[row["id"]] for row in cmrc_queries if row["id"] in cmrc_wanted}
        cmrc_docs = [row for row in _jsonl(eval_dir / "cmrc2018" / "corpus.jsonl") if row["id"] in cmrc_ids][:40]
        self.documents = [
            ("vpn.md", VPN_PAGE),
            *((f"{row['id']}.txt", f"{row['title']}\n\n{row['text']}") for row in scifact_docs),
            *((f"{row['id']}.txt", f"{row.get('title') or ''}\n\n{row['text']}".strip()) for row in cmrc_docs),
        ]
        stack_faqs = _jsonl(eval_dir / "stackfaq" / "faqs.jsonl")[:40]
        bq_faqs = _jsonl(eval_dir / "bq-faq" / "faqs.jsonl")[:60]
        self.faqs = [
            *(FaqEntry(row["question"], (row["answer"],)) for row in stack_faqs),
            *(FaqEntry(row["question"], (f"答案 {n}",)) for n, row in enumerate(bq_faqs)),
        ]
        stack_ids = {row["id"] for row in stack_faqs}
        bq_ids = {row["id"] for row in bq_faqs}
        stack_queries = [r["text"] for r in _jsonl(eval_dir / "stackfaq" / "queries.jsonl") if r["faq_id"] in stack_ids]
        bq_queries = [r["text"] for r in _jsonl(eval_dir / "bq-faq" / "queries.jsonl") if r["faq_id"] in bq_ids]
        bq_queries += [r["text"] for r in _jsonl(eval_dir / "bq-faq" / "queries.jsonl") if r["faq_id"] is None]
        tickets = [f"How do I install the VPN client on my laptop? This is ticket {n}." for n in range(per_kind)]
        fresh = [
            tickets,
            stack_queries[:per_kind],
            [row["text"] for row in scifact_queries],
            [row["text"] for row in cmrc_queries],
            bq_queries[:per_kind],
        ]
        self.questions: list[tuple[str, list[tuple[str, str]]]] = [
            (text, []) for group in zip(*fresh, strict=False) for text in group
        ]
        followups = [
            *_followups(_jsonl(eval_dir / "canard-rewrite" / "rewrite.jsonl")[:per_kind]),
            *_followups(_jsonl(eval_dir / "zh-utterance-rewrite" / "rewrite.jsonl")[:per_kind]),
        ]
        # One follow-up after every three fresh questions.
        mixed: list[tuple[str, list[tuple[str, str]]]] = []
        for index, question in enumerate(self.questions):
            mixed.append(question)
            if index % 3 == 2 and followups:
                mixed.append(followups.pop(0 if index % 2 else -1))
        self.questions = mixed


def _followups(rows: Iterable[dict[str, Any]]) -> list[tuple[str, list[tuple[str, str]]]]:
    found = []
    for row in rows:
        turns = [item for item in row["history"] if item["role"] in ("user", "assistant")]
        rounds = [
            (turns[i]["text"], turns[i + 1]["text"])
            for i in range(0, len(turns) - 1, 2)
            if turns[i]["role"] == "user" and turns[i + 1]["role"] == "assistant"
        ]
        if rounds:
            found.append((str(row["query"]), rounds[-3:]))
    return found


# --- the turns ------------------------------------------------------------------------------------------------


async def _ingest(parts: dict[str, Any], material: Material) -> str:
    kb = await KnowledgeBaseRepo(parts["db"]).create("bench", chunking={"segment": {"max_tokens": 128, "overlap": 12}})
    for name, text in material.documents:
        await parts["ingestor"].ingest(kb, SourceFile(text.encode(), source_uri=f"bench:{name}", filename=name))
    await parts["faq_importer"].import_entries(kb, material.faqs)
    return kb.id


async def _conversation(repo: ConversationRepo, number: int, rounds: Sequence[tuple[str, str]]) -> str:
    conversation = await repo.resolve("bench", "", f"chat{number}")
    for question, answer in rounds:
        await repo.add_message(conversation.id, f"r{number}", "user", question)
        await repo.add_message(conversation.id, f"r{number}", "assistant", answer, meta={"outcome": "generated"})
    return conversation.id


async def _turns(args: argparse.Namespace) -> dict[str, Any]:
    material = Material(args.eval_dir, args.turns)
    async with local_stack(args.weaviate_binary, "ragbot-bench-turn-cpu-") as (store, db):
        cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR")
        tokens = TokenCounter("cl100k_base", Path(cache_dir) if cache_dir else None)
        parts_cpu: dict[str, float] = {}
        lexical = CpuLexical(parts_cpu)
        onnx = CpuEmbedder(OnnxEmbedder(args.model_dir, model_id=MODEL_ID), parts_cpu)
        embedder = CachedEmbedder(onnx, SqlEmbeddingCache(db))
        documents, faqs = DocumentRepo(db), FaqRepo(db)
        kb_id = await _ingest(
            {
                "db": db,
                "ingestor": DocumentIngestor(documents, store, embedder, lexical, tokens.encoding),
                "faq_importer": FaqImporter(faqs, store, embedder, lexical),
            },
            material,
        )
        conversations = ConversationRepo(db)
        model = StubModel()
        parts = PipelineParts(
            retriever=Retriever(store, embedder, lexical, documents, faqs, questions=embedder.transient),
            faqs=FaqSearch(store, faqs, lexical, embedder),
            history=conversations,
            merge_source=MergeReadRepo(db),
            tokens=tokens,
            rewriter=RuleRewriter(),
            reranker=LocalReranker(embedder, lexical),
            model=model,
        )
        cpu: dict[str, float] = {}
        plain = rag_stream(parts)
        timed = Pipeline(plain.name, [CpuStage(stage, cpu) for stage in plain.stages])
        turns = [
            (text, await _conversation(conversations, n, rounds) if rounds else "")
            for n, (text, rounds) in enumerate(material.questions[: WARM_UP + args.turns])
        ]
        outcomes: dict[str, int] = {}
        for text, conversation_id in turns[:WARM_UP]:
            await timed.run(_turn(text, kb_id, conversation_id))
        cpu.clear()
        parts_cpu.clear()
        measured = turns[WARM_UP:]
        if args.profile is not None:
            await _profile(plain, kb_id, measured, args.profile)
            return {}
        started = time.process_time()
        for text, conversation_id in measured:
            turn = await timed.run(_turn(text, kb_id, conversation_id))
            outcomes[turn.outcome] = outcomes.get(turn.outcome, 0) + 1
        total = time.process_time() - started
        stub = await _stub_cpu(model, len(measured))
    per_turn = {name: seconds * 1000 / len(measured) for name, seconds in cpu.items()}
    per_turn.update((name, seconds * 1000 / len(measured)) for name, seconds in sorted(parts_cpu.items()))
    per_turn["STREAM_ANSWER"] = per_turn.get("STREAM_ANSWER", 0.0) - stub
    return {
        "stages": per_turn,
        "stub_ms": stub,
        "total_ms": total * 1000 / len(measured) - stub,
        "turns": len(measured),
        "outcomes": outcomes,
    }


async def _shown(piece: str) -> None:
    """Where the manager would push the piece to the chat (the web route's share is measured apart)."""


def _turn(text: str, kb_id: str, conversation_id: str) -> TurnContext:
    # As bot.chat.manager starts one: a stop button and a place for the pieces.
    return TurnContext(
        query=text, kb_ids=(kb_id,), conversation_id=conversation_id, on_text=_shown, stop=asyncio.Event()
    )


async def _stub_cpu(model: StubModel, turns: int) -> float:
    """The stub model's own CPU ms per answer, drained alone."""
    started = time.process_time()
    for _ in range(turns):
        async for _delta in model.stream([]):
            pass
    return (time.process_time() - started) * 1000 / turns


async def _profile(pipeline: Pipeline, kb_id: str, turns: Sequence[tuple[str, str]], path: Path) -> None:
    """The turns under cProfile instead of timed, worker-thread work run inline so that it is seen."""
    loop = asyncio.get_running_loop()
    loop.set_default_executor(InlineExecutor())
    profiler = cProfile.Profile()
    profiler.enable()
    for text, conversation_id in turns:
        await pipeline.run(_turn(text, kb_id, conversation_id))
    profiler.disable()
    profiler.dump_stats(path)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
    print(out.getvalue(), file=sys.stderr)


# --- the web route --------------------------------------------------------------------------------------------


class _Manager:
    """What WebChat asks of the conversation manager for a turn: its metrics, and handle() streaming an answer."""

    def __init__(self, deltas: int, together: int) -> None:
        from bot.metrics import ChatMetrics

        self.metrics = ChatMetrics()
        self.together = together
        self._answers = [_answer_deltas(seed)[:deltas] for seed in range(16)]
        self._next = 0

    async def handle(self, message: Any, target: Any) -> None:
        from bot.types import Answer, SourceLink

        self._next += 1
        pieces = self._answers[self._next % len(self._answers)]
        stream = target.open_stream()
        for number, piece in enumerate(pieces, start=1):
            await stream.push(piece)
            if number % self.together == 0:
                await asyncio.sleep(0)
        source = SourceLink(number=1, title="vpn.md", snippet=VPN_PAGE[:200])
        await stream.finish(Answer("".join(pieces), (source,), "generated", message_id="m1"))


class _Server:
    """The web chat on a loop in its own thread, so its CPU can be read apart from the client's."""

    def __init__(self, deltas: int, together: int) -> None:
        self._manager = _Manager(deltas, together)
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.url = ""

    def __enter__(self) -> _Server:
        self._thread.start()
        self._ready.wait(30)
        return self

    def __exit__(self, *_exc: object) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def cpu(self) -> float:
        """The server thread's CPU seconds so far."""
        assert self._thread.ident is not None
        return time.clock_gettime(time.pthread_getcpuclockid(self._thread.ident))

    def _serve(self) -> None:
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        from adapters.web.app import WebChat, WebConfig
        from adapters.web.session import SessionSigner
        from bot.app.bodies import LARGE_BODIES, MAX_BODY, limit_bodies
        from bot.chat.limits import RateLimit

        self._stop = asyncio.Event()
        config = WebConfig(None, None, 1_000_000, address_rate_limit=RateLimit(count=10_000_000, window=60.0))
        signer = SessionSigner(secrets.token_bytes(32))

        async def signer_source() -> SessionSigner:
            return signer

        chat = WebChat(self._manager, config, signer_source)  # type: ignore[arg-type]
        # As bot.app.server builds it: the body limits WebChat's upload route extends.
        app = web.Application(client_max_size=MAX_BODY)
        app[LARGE_BODIES] = {}
        app.middlewares.append(limit_bodies)
        chat.mount(app)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()


async def _ask(session: aiohttp.ClientSession, url: str, expected: int) -> None:
    deltas = 0
    async with session.post(
        f"{url}/api/messages", json={"text": "How do I install the VPN client?"}, headers={"Origin": url}
    ) as response:
        response.raise_for_status()
        async for raw in response.content:
            if raw.startswith(b"event: delta"):
                deltas += 1
    if deltas != expected:
        raise RuntimeError(f"{deltas} delta events, expected {expected}")


# (deltas, how many the manager pushes before the route gets a turn): one at a time as a model streams to an idle
# process, ten at a time as they queue up while a busy event loop lags 200 ms behind a 50 tokens/s model.
WEB_CASES = {f"web_{DELTAS}": (DELTAS, 1), f"web_{DELTAS}x10": (DELTAS, 10), "web_1": (1, 1)}


async def _web(requests: int) -> dict[str, float]:
    """Server-thread CPU ms per answer through /api/messages, for each of WEB_CASES."""
    result = {}
    for name, (deltas, together) in WEB_CASES.items():
        with _Server(deltas, together) as server:
            jar = aiohttp.CookieJar(unsafe=True)
            async with aiohttp.ClientSession(cookie_jar=jar) as session:
                async with session.get(f"{server.url}/") as response:
                    response.raise_for_status()
                for _ in range(WARM_UP):
                    await _ask(session, server.url, deltas)
                started = server.cpu()
                for _ in range(requests):
                    await _ask(session, server.url, deltas)
                result[name] = (server.cpu() - started) * 1000 / requests
    return result


# --- running, comparing and reporting -------------------------------------------------------------------------


async def _child(args: argparse.Namespace) -> dict[str, Any]:
    result = await _turns(args)
    if args.profile is not None:
        return result
    result.update(await _web(args.turns))
    result["commit"] = commit()
    return result


def _run_child(tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    command = [
        sys.executable,
        "-m",
        "bench.turn_cpu",
        "--child",
        "--turns",
        str(args.turns),
        "--model-dir",
        str(args.model_dir),
        "--eval-dir",
        str(args.eval_dir),
        "--weaviate-binary",
        str(args.weaviate_binary),
    ]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the run in {tree} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _merge(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Several runs of one tree: the median of each figure."""
    merged: dict[str, Any] = {"commit": runs[0]["commit"], "turns": runs[0]["turns"], "outcomes": runs[0]["outcomes"]}
    merged["stages"] = {name: statistics.median(run["stages"][name] for run in runs) for name in runs[0]["stages"]}
    for key in ("stub_ms", "total_ms", *WEB_CASES):
        merged[key] = statistics.median(run[key] for run in runs)
    return merged


def _report(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    labels = list(results)
    first = results[labels[0]]
    print(f"\n{machine()} · {first['turns']} turns a run, median of {args.rounds} run(s) per tree\n")
    print("| CPU ms per turn | " + " | ".join(f"{label} ({results[label]['commit']})" for label in labels) + " |")
    print("| --- | " + " | ".join("---:" for _ in labels) + " |")
    for name in first["stages"]:
        print(f"| {name} | " + " | ".join(f"{results[label]['stages'].get(name, 0.0):.2f}" for label in labels) + " |")
    rows = [
        ("rag_stream outside the model", "total_ms"),
        (f"web route, {DELTAS}-delta answer", f"web_{DELTAS}"),
        (f"web route, {DELTAS}-delta answer, 10 deltas a wake-up", f"web_{DELTAS}x10"),
        ("web route, 1-delta answer", "web_1"),
    ]
    for title, key in rows:
        print(f"| **{title}** | " + " | ".join(f"{results[label][key]:.2f}" for label in labels) + " |")
    per_delta = " | ".join(
        f"{(results[label][f'web_{DELTAS}'] - results[label]['web_1']) / (DELTAS - 1) * 1000:.1f} µs"
        for label in labels
    )
    print(f"| web route, per delta | {per_delta} |")
    whole = " | ".join(f"{results[label]['total_ms'] + results[label][f'web_{DELTAS}']:.2f}" for label in labels)
    print(f"| **a turn in all (rag_stream + web route)** | {whole} |")
    stub = " | ".join(f"{results[label]['stub_ms']:.2f}" for label in labels)
    print(f"| (model stub's own CPU, taken off) | {stub} |")
    print("\noutcomes: " + "; ".join(f"{label} {results[label]['outcomes']}" for label in labels))


def main() -> None:
    """Measure and print a markdown table (or, with --child, one JSON line)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1, help="runs per tree, alternating (medians reported)")
    parser.add_argument("--before", type=Path, help="a copy of the older tree to run this script in too")
    parser.add_argument("--before-commit", default="before", help="what to call the older tree in the table")
    parser.add_argument("--profile", type=Path, help="profile the turns into PROFILE instead of timing them")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parse_arguments(parser)
    if args.child or (args.before is None and args.profile is not None):
        result = asyncio.run(_child(args))
        print(json.dumps(result))
        return
    trees = {"after": ROOT}
    if args.before is not None:
        shutil.copy(Path(__file__), args.before / "bench" / "turn_cpu.py")
        trees = {"before": args.before.resolve(), "after": ROOT}
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
    for _ in range(args.rounds):
        for label, tree in trees.items():
            runs[label].append(_run_child(tree, args))
    merged = {label: _merge(found) for label, found in runs.items()}
    if "before" in merged:
        merged["before"]["commit"] = args.before_commit
    _report(merged, args)


if __name__ == "__main__":
    main()
