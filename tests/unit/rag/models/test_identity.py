"""Which model made a vector: a local folder is told apart by its deciding files, an API model by its name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from rag.models.identity import vector_model_id
from storage.weaviate import schema

NAME = "sentence-transformers/all-MiniLM-L6-v2"


def _copy(model_dir: Path, to: Path) -> Path:
    # The weights are linked (90 MB); the small files that decide the vectors are copied, so they can be edited.
    to.mkdir()
    for item in model_dir.iterdir():
        if item.is_dir():
            shutil.copytree(item, to / item.name)
        elif item.name == "model.onnx":
            (to / item.name).symlink_to(item)
        else:
            shutil.copy(item, to / item.name)
    return to


def test_an_api_model_is_its_name() -> None:
    assert vector_model_id("text-embedding-3-small", None) == "text-embedding-3-small"


def test_a_local_folder_is_its_name_and_a_fingerprint_of_what_decides_its_vectors(
    model_dir: Path, tmp_path: Path
) -> None:
    same = _copy(model_dir, tmp_path / "same")
    edited = _copy(model_dir, tmp_path / "edited")
    prompts = {"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": None}
    (edited / "config_sentence_transformers.json").write_text(json.dumps(prompts))
    original = vector_model_id(NAME, model_dir, model_dir / "model.onnx")
    assert original.startswith(f"{NAME}@")
    assert vector_model_id(NAME, same, same / "model.onnx") == original
    assert vector_model_id(NAME, edited, edited / "model.onnx") != original


def test_a_collection_description_records_the_terms_version_and_whose_vectors_it_holds() -> None:
    fresh = schema.description("model-a")
    assert schema.vector_model(fresh) == "model-a"
    assert schema.terms_version(fresh) == schema.BM25_TERMS_VERSION
    # Re-recording keeps the other records and holds one model only.
    moved = schema.with_vector_model(fresh, "model-b")
    assert schema.vector_model(moved) == "model-b"
    assert schema.terms_version(moved) == schema.BM25_TERMS_VERSION
    assert moved.count("vectors") == 1
    # A description from before the record: no model, terms version 1, and both survive recording one.
    assert schema.vector_model("") is None
    old = schema.with_vector_model("", "model-a")
    assert schema.vector_model(old) == "model-a"
    assert schema.terms_version(old) == 1
