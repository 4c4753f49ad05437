"""Embedders: local ONNX sentence-transformers, any OpenAI-compatible API, and the cache in front of both."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Tokenizer

from rag.config import EmbedderConfig
from rag.errors import EmbedderUnavailable, ModelError, ModelTimeout
from rag.models.model_folder import ModelSettings, read_model_settings
from rag.ports import Embedder, EmbeddingCache, EmbedKind
from rag.types import Vector

log = logging.getLogger(__name__)

_MODEL_FILES = ("model.onnx", "onnx/model.onnx")
_DOWNLOAD_PATTERNS = [
    "onnx/model.onnx",
    "tokenizer.json",
    "config.json",
    "*.txt",
    "*_config.json",
    "*.md",
    # sentence-transformers' own settings: pooling, normalisation, prompts (rag.models.model_folder reads them)
    "modules.json",
    "1_Pooling/config.json",
    "config_sentence_transformers.json",
]


def find_onnx_model(model_dir: Path) -> Path:
    """The ONNX file in a model folder (top level, or onnx/ as on the model hub)."""
    for name in _MODEL_FILES:
        if (model_dir / name).is_file():
            return model_dir / name
    raise EmbedderUnavailable(f"no model.onnx in {model_dir}: point EMBEDDING_MODEL_DIR at an ONNX model folder")


def download_model(model: str, cache_dir: Path) -> Path:
    """Fetch the model's ONNX export from the model hub into `cache_dir` (needs a network)."""
    from huggingface_hub import snapshot_download  # imported here: only a first run with no model needs it

    target = cache_dir / model.replace("/", "--")
    try:
        snapshot_download(repo_id=model, allow_patterns=_DOWNLOAD_PATTERNS, local_dir=target)
    except Exception as exc:  # the hub client raises many unrelated types for "no network"
        raise EmbedderUnavailable(
            f"could not download embedding model {model!r} ({type(exc).__name__}): "
            "set EMBEDDING_MODEL_DIR to a local copy of the model folder"
        ) from exc
    return target


def resolve_model_dir(config: EmbedderConfig) -> Path:
    """The local model folder: the configured one, a cached download, or a fresh download."""
    if config.model_dir is not None:
        if not config.model_dir.is_dir():
            raise EmbedderUnavailable(
                f"EMBEDDING_MODEL_DIR={config.model_dir} does not exist: point it at the model folder"
            )
        return config.model_dir
    cached = config.cache_dir / config.model.replace("/", "--")
    if any((cached / name).is_file() for name in _MODEL_FILES):
        return cached
    return download_model(config.model, config.cache_dir)


# Padded tokens per model run. A run costs by its padded size, and on the 2-core reference machine (bench/turn_cpu.py)
# smaller runs cost less CPU per text even without padding (the activations of a 64 x 256 batch outgrow the CPU
# caches): 26 reranking windows took 963 ms of CPU in one run and 491 ms in runs of at most 512 tokens, 64 chunks
# 5.6 s and 3.9 s; the vectors are the same to the bit, each row being computed alone.
_RUN_TOKENS = 512
# One thread per model run, and no spinning: onnxruntime's default pool of one thread per core spins between runs,
# which tripled the CPU of a one-question embedding (24.8 ms -> 6.7 ms) and made none of them faster on 2 cores.
# Concurrent questions still run in parallel, each in its own worker thread (the session is thread-safe).
_THREADS = 1


class OnnxEmbedder:
    """A sentence-transformers model exported to ONNX, pooled, normalised and prompted as its folder says."""

    provider = "local"

    def __init__(
        self, model_dir: Path, *, model_id: str, max_tokens: int = 256, batch_size: int = 64, threads: int = _THREADS
    ) -> None:
        self._model_id = model_id
        self._batch_size = batch_size
        # Read first: a setting the embedder cannot honour stops startup before the model is loaded.
        self._settings: ModelSettings = read_model_settings(model_dir)
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # sentence-transformers truncates this model family at 256 word pieces
        # (sentence_bert_config.json); the tokenizer file alone would allow 512.
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.no_padding()
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(find_onnx_model(model_dir)), options, providers=["CPUExecutionProvider"]
        )
        self._input_names = {item.name for item in self._session.get_inputs()}
        self._dimension = int(json.loads((model_dir / "config.json").read_text())["hidden_size"])
        log.info(
            "embedder=%s pooling=%s normalize=%s query_prompt=%r passage_prompt=%r",
            model_id,
            self._settings.pooling,
            self._settings.normalize,
            self._settings.prompts.query,
            self._settings.prompts.passage,
        )

    @classmethod
    def from_config(cls, config: EmbedderConfig) -> OnnxEmbedder:
        """Load the configured model, downloading it first where it is missing and a network exists."""
        return cls(
            resolve_model_dir(config),
            model_id=config.model,
            max_tokens=config.max_tokens,
            batch_size=config.batch_size,
        )

    @property
    def model_id(self) -> str:
        """The model's name."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """Vector length (384 for all-MiniLM-L6-v2)."""
        return self._dimension

    def prompt(self, kind: EmbedKind) -> str:
        """The prompt config_sentence_transformers.json gives `kind` ("" for none)."""
        return self._settings.prompts.of(kind)

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        """One vector per text, after `kind`'s prompt; runs in a worker thread (onnxruntime releases the GIL)."""
        if not texts:
            return []
        return await asyncio.to_thread(self.embed_sync, texts, kind=kind)

    def embed_sync(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        """The blocking form of embed(), for benchmarks and worker threads."""
        # As sentence-transformers does: the prompt is plain text before the text, truncated with it.
        prompt = self.prompt(kind)
        encodings = self._tokenizer.encode_batch([prompt + text for text in texts])
        # Batching texts of similar length keeps padding, and so wasted compute, small.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        vectors: list[Vector] = [[] for _ in texts]
        for batch in _runs(order, [len(encoding.ids) for encoding in encodings], self._batch_size):
            pooled = self._run([encodings[i].ids for i in batch], [encodings[i].type_ids for i in batch])
            for index, vector in zip(batch, pooled, strict=True):
                vectors[index] = vector.tolist()
        return vectors

    def _run(self, ids: list[list[int]], type_ids: list[list[int]]) -> npt.NDArray[np.float32]:
        width = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        token_types = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, (tokens, types) in enumerate(zip(ids, type_ids, strict=True)):
            input_ids[row, : len(tokens)] = tokens
            token_types[row, : len(types)] = types
            mask[row, : len(tokens)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": token_types}
        outputs: list[Any] = self._session.run(None, {k: v for k, v in feeds.items() if k in self._input_names})
        return self._pool(np.asarray(outputs[0], dtype=np.float32), mask)

    def _pool(self, hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """One vector per row of token embeddings (padded on the right), as sentence-transformers' Pooling."""
        if self._settings.pooling == "cls":
            pooled = hidden[:, 0]
        elif self._settings.pooling == "lasttoken":
            pooled = hidden[np.arange(len(hidden)), np.maximum(mask.sum(axis=1) - 1, 0)]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        if self._settings.normalize:
            pooled = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        result: npt.NDArray[np.float32] = pooled.astype(np.float32)
        return result


def _runs(order: Sequence[int], lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """`order` (indexes by ascending length) cut into model runs of at most `batch_size` texts and _RUN_TOKENS padded
    tokens (a text longer than that alone)."""
    runs: list[list[int]] = []
    run: list[int] = []
    for index in order:
        if run and (len(run) == batch_size or (len(run) + 1) * lengths[index] > _RUN_TOKENS):
            runs.append(run)
            run = []
        run.append(index)
    if run:
        runs.append(run)
    return runs


class OpenAIEmbedder:
    """Any OpenAI-compatible /embeddings endpoint."""

    provider = "openai"

    def __init__(self, config: EmbedderConfig, *, timeout: float = 60.0, max_retries: int = 2) -> None:
        # Imported with the first API embedder: ~0.2 s of start-up that the local model never needs.
        import openai

        self._model_id = config.model
        self._batch_size = config.batch_size
        self._dimension = config.dimension
        self._client = openai.AsyncOpenAI(
            base_url=config.base_url,
            api_key=config.api_key or "unused",
            timeout=timeout,
            max_retries=max_retries,
        )

    @property
    def model_id(self) -> str:
        """The model's name."""
        return self._model_id

    @property
    def dimension(self) -> int | None:
        """Vector length: configured, or learnt from the first answer."""
        return self._dimension

    def prompt(self, kind: EmbedKind) -> str:
        """Always "": an embeddings API applies whatever its model needs itself."""
        return ""

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        """One vector per text, in order, batched by the configured size (`kind` changes nothing)."""
        vectors: list[Vector] = []
        for start in range(0, len(texts), self._batch_size):
            vectors.extend(await self._embed_batch(list(texts[start : start + self._batch_size])))
        if vectors and self._dimension is None:
            self._dimension = len(vectors[0])
        return vectors

    async def close(self) -> None:
        """Close the HTTP client."""
        await self._client.close()

    async def _embed_batch(self, batch: list[str]) -> list[Vector]:
        import openai

        try:
            response = await self._client.embeddings.create(model=self._model_id, input=batch)
        except openai.APITimeoutError as exc:
            raise ModelTimeout(f"embedding API timed out: {exc}") from exc
        except openai.APIStatusError as exc:
            raise ModelError(
                f"embedding API answered {exc.status_code}: {exc.message}", status=exc.status_code
            ) from exc
        except openai.APIError as exc:
            raise ModelError(f"embedding API failed: {exc}") from exc
        ordered = sorted(response.data, key=lambda item: item.index)
        if len(ordered) != len(batch):
            raise ModelError(f"embedding API returned {len(ordered)} vectors for {len(batch)} texts")
        return [list(item.embedding) for item in ordered]


def content_hash(text: str) -> str:
    """The cache key of a text: SHA-256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# Recent texts embedded without being stored (questions): SEARCH embeds a question and RERANK asks again.
_RECENT = 1024


class CachedEmbedder:
    """An embedder that looks each text up by content hash first and embeds only what is missing.

    `embed` stores what it computes (passages, FAQ questions); `transient` is the same embedder for questions,
    which are kept in memory for a while but never written to the cache table, which would otherwise grow with
    every question anyone asks. The hash is of the text the model reads, its kind's prompt included: a query and
    a passage of the same words share a vector exactly when the model prompts them alike (or not at all).
    """

    def __init__(
        self, inner: Embedder, cache: EmbeddingCache, *, cache_model: str | None = None, recent: int = _RECENT
    ) -> None:
        """`cache_model` files the vectors under a name that identifies the model exactly (a local folder's
        fingerprint, rag.models.identity); unset, the model's name. `recent` is how many questions' vectors are
        remembered."""
        self._inner = inner
        self._recent_size = recent
        self._cache = cache
        self._cache_model = cache_model or inner.model_id
        # Packed doubles (3 KB a 384-dimension vector, 12 KB as a list of floats), the same numbers exactly.
        self._recent: OrderedDict[str, array[float]] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.transient = TransientEmbedder(self)

    @property
    def provider(self) -> str:
        """The wrapped embedder's provider."""
        return self._inner.provider

    @property
    def model_id(self) -> str:
        """The wrapped embedder's model."""
        return self._inner.model_id

    @property
    def dimension(self) -> int | None:
        """The wrapped embedder's vector length."""
        return self._inner.dimension

    def prompt(self, kind: EmbedKind) -> str:
        """The wrapped embedder's prompt for `kind`."""
        return self._inner.prompt(kind)

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        """Vectors for `texts`: recent or cached ones reused, the rest embedded once each and stored."""
        prompt = self._inner.prompt(kind)
        hashes = [content_hash(prompt + text) for text in texts]
        found = {h: list(self._recent[h]) for h in hashes if h in self._recent}
        asked = [h for h in dict.fromkeys(hashes) if h not in found]
        if asked:
            found.update(await self._cache.get_many(self.provider, self._cache_model, asked))
        missing = {h: text for h, text in zip(hashes, texts, strict=True) if h not in found}
        if missing:
            fresh = await self._inner.embed(list(missing.values()), kind=kind)
            computed = dict(zip(missing.keys(), fresh, strict=True))
            await self._cache.put_many(self.provider, self._cache_model, computed)
            found.update(computed)
        self.misses += len(missing)
        self.hits += len(texts) - len(missing)
        return [found[h] for h in hashes]

    async def embed_transient(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        """Vectors for `texts` kept in memory only: for questions, which are seldom asked twice word for word."""
        prompt = self._inner.prompt(kind)
        hashes = [content_hash(prompt + text) for text in texts]
        # Taken out before the wait: other questions may push these out of memory while the model embeds the rest.
        found = {h: list(self._recent[h]) for h in hashes if h in self._recent}
        missing = {h: text for h, text in zip(hashes, texts, strict=True) if h not in found}
        if missing:
            fresh = await self._inner.embed(list(missing.values()), kind=kind)
            found.update(zip(missing, fresh, strict=True))
        for h in hashes:
            if h in self._recent:
                self._recent.move_to_end(h)
            else:
                self._recent[h] = array("d", found[h])
        while len(self._recent) > self._recent_size:
            self._recent.popitem(last=False)
        return [found[h] for h in hashes]


class TransientEmbedder:
    """A CachedEmbedder's question path: an Embedder that never writes to the cache table."""

    def __init__(self, cached: CachedEmbedder) -> None:
        self._cached = cached

    @property
    def provider(self) -> str:
        """The wrapped embedder's provider."""
        return self._cached.provider

    @property
    def model_id(self) -> str:
        """The wrapped embedder's model."""
        return self._cached.model_id

    @property
    def dimension(self) -> int | None:
        """The wrapped embedder's vector length."""
        return self._cached.dimension

    def prompt(self, kind: EmbedKind) -> str:
        """The wrapped embedder's prompt for `kind`."""
        return self._cached.prompt(kind)

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> list[Vector]:
        """Vectors for `texts`, remembered in memory only."""
        return await self._cached.embed_transient(texts, kind=kind)


def build_embedder(config: EmbedderConfig) -> OnnxEmbedder | OpenAIEmbedder:
    """The embedder the configuration names (uncached)."""
    if config.provider == "openai":
        if not config.base_url:
            raise EmbedderUnavailable("EMBEDDING_PROVIDER=openai needs EMBEDDING_BASE_URL")
        return OpenAIEmbedder(config)
    return OnnxEmbedder.from_config(config)
