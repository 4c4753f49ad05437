"""Which embedding model made a vector: the name the index records, so vectors of two models never mix."""

from __future__ import annotations

import hashlib
from pathlib import Path

# The files that decide a local model's vectors (weights aside, which are told apart by size): a folder swapped
# under the same EMBEDDING_MODEL name, or one whose pooling or prompts were edited, is another model.
_DECIDING_FILES = (
    "config.json",
    "tokenizer.json",
    "modules.json",
    "1_Pooling/config.json",
    "config_sentence_transformers.json",
)


def vector_model_id(model: str, model_dir: Path | None, onnx_file: Path | None = None) -> str:
    """`model` for an API model; for a local folder, `model@` and a fingerprint of the folder's deciding files."""
    if model_dir is None:
        return model
    digest = hashlib.sha256()
    for name in _DECIDING_FILES:
        path = model_dir / name
        digest.update(name.encode())
        digest.update(path.read_bytes() if path.is_file() else b"-")
    if onnx_file is not None:
        digest.update(str(onnx_file.stat().st_size).encode())
    return f"{model}@{digest.hexdigest()[:8]}"
