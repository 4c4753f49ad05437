"""The local ONNX embedder against the vectors sentence-transformers produced from the original weights."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from rag.errors import EmbedderConfigError
from rag.models.embedders import CachedEmbedder, OnnxEmbedder, find_onnx_model
from storage.db import Database
from storage.embedding_cache import SqlEmbeddingCache

# Vectors sentence-transformers produced from the original weights (encode(normalize_embeddings=True)).
REFERENCE = Path(__file__).resolve().parents[1] / "data" / "minilm_reference_embeddings.json"


def _reference() -> tuple[list[str], np.ndarray]:
    data = json.loads(REFERENCE.read_text())
    return data["texts"], np.asarray(data["embeddings"], dtype=np.float32)


async def test_reproduces_reference_embeddings(embedder: OnnxEmbedder) -> None:
    texts, expected = _reference()
    vectors = np.asarray(await embedder.embed(texts))
    assert vectors.shape == expected.shape == (len(texts), embedder.dimension)
    assert np.abs(vectors - expected).max() < 1e-5


async def test_order_is_kept_whatever_the_batching(model_dir: Path, embedder: OnnxEmbedder) -> None:
    texts, expected = _reference()
    texts, expected = texts[::-1] * 3, np.concatenate([expected[::-1]] * 3)
    small_batches = OnnxEmbedder(model_dir, model_id="m", batch_size=2)
    vectors = np.asarray(await small_batches.embed(texts))
    assert np.abs(vectors - expected).max() < 1e-5


async def test_a_text_gets_the_same_vector_to_the_bit_alone_or_in_a_batch_of_any_lengths(
    embedder: OnnxEmbedder,
) -> None:
    # Many texts of mixed lengths are cut into several model runs (by count and by padded tokens): each text's vector
    # must not depend on its company, or a question's vector would change with what else is embedded beside it.
    texts, _ = _reference()
    mixed = [*texts, *(" ".join([text] * repeat) for repeat in (2, 5, 12) for text in texts)]
    together = await embedder.embed(mixed)
    alone = [vector for text in mixed for vector in await embedder.embed([text])]
    assert together == alone


async def test_long_text_is_truncated_at_256_word_pieces(embedder: OnnxEmbedder) -> None:
    # ~900 word pieces: everything past the 256th piece must not change the vector.
    long_text = " ".join(f"word{i} is followed by another" for i in range(150))
    tail_changed = long_text + " and a completely different ending about volcanoes"
    first, second = await embedder.embed([long_text, tail_changed])
    assert np.allclose(first, second, atol=1e-6)
    head, other_head = await embedder.embed(["volcanoes " + long_text, long_text])
    assert not np.allclose(head, other_head, atol=1e-3)


async def test_vectors_are_unit_length(embedder: OnnxEmbedder) -> None:
    vectors = np.asarray(await embedder.embed(["a", "检索增强生成", "x" * 3000]))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


async def test_cache_serves_the_second_request_without_embedding(db: Database, embedder: OnnxEmbedder) -> None:
    cached = CachedEmbedder(embedder, SqlEmbeddingCache(db))
    first = await cached.embed(["alpha", "beta", "alpha"])
    assert (cached.misses, cached.hits) == (2, 1)
    second = await cached.embed(["beta", "alpha"])
    assert (cached.misses, cached.hits) == (2, 3)
    assert np.allclose(second, [first[1], first[0]], atol=1e-6)


# --- the folder's sentence-transformers config, on an edited copy of the MiniLM folder --------------------------------

# Texts of different lengths, so that a batch pads the shorter ones and pooling must skip the padding.
TEXTS = ["hi", "a second sentence that is somewhat longer than the first", "检索增强生成"]
MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
]
FLAGS = ("pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens", "pooling_mode_lasttoken")
_EDITED = {"modules.json", "1_Pooling", "config_sentence_transformers.json"}


def _copy(model_dir: Path, target: Path, files: dict[str, Any]) -> Path:
    """`target` holding the model folder (linked: it is read-only and 90 MB) with `files` written over it."""
    target.mkdir()
    for entry in model_dir.iterdir():
        if entry.name not in _EDITED:
            (target / entry.name).symlink_to(entry)
    for name, content in files.items():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_text(json.dumps(content), encoding="utf-8")
    return target


def _pooling(mode: str) -> dict[str, Any]:
    return {"word_embedding_dimension": 384, **{flag: flag == f"pooling_mode_{mode}" for flag in FLAGS}}


def _token_embeddings(model_dir: Path, text: str) -> npt.NDArray[np.float32]:
    """The model's token embeddings for one text, unpadded, straight from onnxruntime."""
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()  # the file pads to 128 tokens; these are the text's own tokens only
    encoding = tokenizer.encode(text)
    session = ort.InferenceSession(str(find_onnx_model(model_dir)), providers=["CPUExecutionProvider"])
    feeds = {
        "input_ids": np.asarray([encoding.ids], dtype=np.int64),
        "attention_mask": np.ones((1, len(encoding.ids)), dtype=np.int64),
        "token_type_ids": np.asarray([encoding.type_ids], dtype=np.int64),
    }
    names = {item.name for item in session.get_inputs()}
    hidden: npt.NDArray[np.float32] = session.run(None, {k: v for k, v in feeds.items() if k in names})[0][0]
    return hidden


def _unit(vector: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    return vector / np.linalg.norm(vector)


@pytest.mark.parametrize(
    ("mode", "by_hand"),
    [
        ("mean_tokens", lambda tokens: tokens.mean(axis=0)),
        ("cls_token", lambda tokens: tokens[0]),
        ("lasttoken", lambda tokens: tokens[-1]),
    ],
    ids=["mean", "cls", "lasttoken"],
)
async def test_each_pooling_mode_gives_the_vector_numpy_pools_by_hand(
    model_dir: Path, tmp_path: Path, mode: str, by_hand: Any
) -> None:
    folder = _copy(model_dir, tmp_path / "model", {"modules.json": MODULES, "1_Pooling/config.json": _pooling(mode)})
    vectors = np.asarray(await OnnxEmbedder(folder, model_id="m").embed(TEXTS))
    expected = np.asarray([_unit(by_hand(_token_embeddings(model_dir, text))) for text in TEXTS])
    assert np.abs(vectors - expected).max() < 1e-5


async def test_without_a_normalize_module_the_pooled_vector_is_returned_as_is(model_dir: Path, tmp_path: Path) -> None:
    files = {"modules.json": MODULES[:2], "1_Pooling/config.json": _pooling("mean_tokens")}
    vectors = np.asarray(await OnnxEmbedder(_copy(model_dir, tmp_path / "model", files), model_id="m").embed(TEXTS))
    expected = np.asarray([_token_embeddings(model_dir, text).mean(axis=0) for text in TEXTS])
    assert np.abs(vectors - expected).max() < 1e-4
    assert not np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)


async def test_queries_and_passages_get_their_own_prompt(
    model_dir: Path, tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    files = {
        "modules.json": MODULES,
        "1_Pooling/config.json": _pooling("mean_tokens"),
        "config_sentence_transformers.json": {"prompts": {"query": "query: ", "passage": "passage: "}},
    }
    prompted = OnnxEmbedder(_copy(model_dir, tmp_path / "model", files), model_id="m")
    queries = np.asarray(await prompted.embed(TEXTS, kind="query"))
    passages = np.asarray(await prompted.embed(TEXTS))
    # `embedder` is the shipped folder, which has no prompts: it embeds exactly the text it is given.
    assert np.abs(queries - np.asarray(await embedder.embed([f"query: {text}" for text in TEXTS]))).max() < 1e-5
    assert np.abs(passages - np.asarray(await embedder.embed([f"passage: {text}" for text in TEXTS]))).max() < 1e-5
    assert (prompted.prompt("query"), prompted.prompt("passage")) == ("query: ", "passage: ")


async def test_the_shipped_folder_has_no_prompts_so_a_query_is_embedded_as_a_passage(embedder: OnnxEmbedder) -> None:
    assert np.allclose(await embedder.embed(TEXTS, kind="query"), await embedder.embed(TEXTS), atol=1e-6)


async def test_a_folder_without_pooling_config_is_mean_pooled_and_says_so_once(
    model_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = _copy(model_dir, tmp_path / "model", {"modules.json": MODULES})
    texts, expected = _reference()
    with caplog.at_level(logging.WARNING):
        bare = OnnxEmbedder(folder, model_id="m")
        for _ in range(2):
            assert np.abs(np.asarray(await bare.embed(texts)) - expected).max() < 1e-5
    assert [record.getMessage() for record in caplog.records if "mean pooling" in record.getMessage()] == [
        f"model_dir={folder} assumed mean pooling (no 1_Pooling/config.json)"
    ]


def test_an_unknown_pooling_mode_refuses_startup_naming_file_and_field(model_dir: Path, tmp_path: Path) -> None:
    config = {**_pooling("mean_tokens"), "pooling_mode_mean_tokens": False, "pooling_mode_weightedmean_tokens": True}
    folder = _copy(model_dir, tmp_path / "model", {"modules.json": MODULES, "1_Pooling/config.json": config})
    with pytest.raises(EmbedderConfigError, match="pooling_mode_weightedmean_tokens") as refused:
        OnnxEmbedder(folder, model_id="m")
    assert refused.value.path == str(folder / "1_Pooling" / "config.json")
    assert refused.value.field == "pooling_mode_weightedmean_tokens"
