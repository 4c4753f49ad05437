"""The concurrency benchmarks' fake chat model in a process of its own, so the service's CPU figures exclude it.

The child runs FakeOpenAI (known answers per ticket, a time to first token, paced deltas) and prints its port; the
bench reads back what it streamed (StreamedReply, stamped with time.monotonic(), one clock for every process on
Linux) over one extra route. With --model-dir its embeddings endpoint is the service's embedder for the ingestion
scenario: the real ONNX vectors for every text (questions, the handbook), except the archive's chunks
(bench.ingestion_load), which get a hash vector of the same length at once, so 60,000 of them cost no model time.

    python -m bench.model_process --ttft 0.2 --tokens-per-second 50 [--model-dir DIR]   # prints "port N"
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import math
import struct
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bench.common import ROOT
from bench.conversations import reply_for
from bench.ingestion_load import is_archive_text
from fakes.openai_api import FakeOpenAI, StreamedReply
from rag.models.embedders import OnnxEmbedder

_KEY = "test-key"
_RECORDS = "/bench/streamed"


class _RecordingFake(FakeOpenAI):
    """FakeOpenAI with one more route (the answers streamed since the last call, then forgotten) and, given a model,
    real embeddings for all but the archive's chunks."""

    def __init__(self, model_dir: Path | None) -> None:
        super().__init__(api_key=_KEY)
        self._model_dir = model_dir
        self._embedder: OnnxEmbedder | None = None

    def add_routes(self, app: web.Application) -> None:
        super().add_routes(app)
        app.router.add_get(_RECORDS, self._records)

    async def _records(self, request: web.Request) -> web.StreamResponse:
        taken, self.streamed = self.streamed, []
        self.requests.clear()  # thousands of prompts a burst: the bench never reads them
        return web.json_response([[r.reply, list(r.deltas), r.received, r.sent] for r in taken])

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        if self._model_dir is None:
            return await super()._embeddings(request)
        body = await request.json()
        texts = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
        if self._embedder is None:
            self._embedder = OnnxEmbedder(self._model_dir, model_id="sentence-transformers/all-MiniLM-L6-v2")
        dimension = self._embedder.dimension
        real = [text for text in texts if not is_archive_text(text)]
        vectors = dict(zip(real, await self._embedder.embed(real), strict=True))
        data = []
        for index, text in enumerate(texts):
            vector = vectors[text] if text in vectors else _hash_vector(text, dimension)
            packed = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            encoded: Any = packed if body.get("encoding_format") == "base64" else vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        usage = {"prompt_tokens": 0, "total_tokens": 0}
        return web.json_response({"object": "list", "data": data, "model": body.get("model", ""), "usage": usage})


def _hash_vector(text: str, dimension: int) -> list[float]:
    """A unit vector of `dimension` from SHA-256 blocks of the text: distinct per text, no model time."""
    digest = b"".join(hashlib.sha256(f"{block}:{text}".encode()).digest() for block in range(dimension // 32 + 1))
    raw = [byte / 128 - 1 for byte in digest[:dimension]]
    norm = math.sqrt(sum(value * value for value in raw)) or 1.0
    return [value / norm for value in raw]


async def _serve(ttft: float, tokens_per_second: float, model_dir: Path | None) -> None:
    async with _RecordingFake(model_dir) as fake:
        fake.first_token_delay = ttft
        fake.tokens_per_second = tokens_per_second
        fake.reply_for = reply_for
        print(f"port {fake.base_url.rsplit(':', 1)[1].split('/')[0]}", flush=True)
        # Until the bench closes our stdin (or dies): no orphan when it is killed.
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


class ModelProcess:
    """The bench's handle on the child: its URL and pace, and the streamed answers of the last burst."""

    def __init__(self, base_url: str, tokens_per_second: float) -> None:
        self.base_url = base_url
        self.api_key = _KEY
        self.tokens_per_second = tokens_per_second
        self.streamed: list[StreamedReply] = []

    async def reset(self) -> None:
        """Forget what was streamed so far (before a burst)."""
        await self._take()
        self.streamed = []

    async def collect(self) -> None:
        """Fetch what was streamed since the last reset into `streamed`."""
        self.streamed = await self._take()

    async def _take(self) -> list[StreamedReply]:
        url = self.base_url.removesuffix("/v1") + _RECORDS
        headers = {"Authorization": f"Bearer {_KEY}"}
        async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as response:
            response.raise_for_status()
            rows: list[list[Any]] = await response.json()
        return [StreamedReply(reply, tuple(deltas), received, sent) for reply, deltas, received, sent in rows]


@asynccontextmanager
async def model_process(ttft: float, tokens_per_second: float, model_dir: Path | None) -> AsyncIterator[ModelProcess]:
    """Start the fake model in a child process, ready; stopped when the block ends."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.model_process",
        "--ttft",
        str(ttft),
        "--tokens-per-second",
        str(tokens_per_second),
        *(["--model-dir", str(model_dir)] if model_dir else []),
        cwd=ROOT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stdin is not None
    try:
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        if not line.startswith("port "):
            raise RuntimeError(f"the fake model did not start: {line!r}")
        yield ModelProcess(f"http://127.0.0.1:{int(line.split()[1])}/v1", tokens_per_second)
    finally:
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()


def main() -> None:
    """Serve the fake model until stdin closes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ttft", type=float, default=0.2)
    parser.add_argument("--tokens-per-second", type=float, default=50.0)
    parser.add_argument("--model-dir", type=Path, help="serve real embeddings (but the archive's) from this model")
    args = parser.parse_args()
    asyncio.run(_serve(args.ttft, args.tokens_per_second, args.model_dir))


if __name__ == "__main__":
    main()
