"""read_model_settings: pooling, normalisation and prompts from a sentence-transformers folder, and what it refuses."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from rag.errors import EmbedderConfigError, EmbedderUnavailable
from rag.models.model_folder import ModelSettings, Prompts, read_model_settings

MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
]
MEAN = {
    "word_embedding_dimension": 384,
    "pooling_mode_cls_token": False,
    "pooling_mode_mean_tokens": True,
    "pooling_mode_max_tokens": False,
    "pooling_mode_mean_sqrt_len_tokens": False,
}


def _folder(root: Path, files: dict[str, Any]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return root


def _pooling(**flags: bool) -> dict[str, Any]:
    return {**MEAN, "pooling_mode_mean_tokens": False, **flags}


def test_the_minilm_layout_reads_as_mean_pooling_normalised_without_prompts(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {"modules.json": MODULES, "1_Pooling/config.json": MEAN})
    assert read_model_settings(folder) == ModelSettings(pooling="mean", normalize=True, prompts=Prompts())


@pytest.mark.parametrize(
    ("config", "pooling"),
    [
        (_pooling(pooling_mode_cls_token=True), "cls"),
        (_pooling(pooling_mode_lasttoken=True), "lasttoken"),
        (_pooling(pooling_mode_mean_tokens=True, pooling_mode_weightedmean_tokens=False), "mean"),
        ({"word_embedding_dimension": 384, "pooling_mode": "cls"}, "cls"),
    ],
    ids=["cls", "lasttoken", "mean", "pooling_mode string"],
)
def test_the_pooling_mode_comes_from_the_pooling_config(tmp_path: Path, config: dict[str, Any], pooling: str) -> None:
    folder = _folder(tmp_path, {"modules.json": MODULES, "1_Pooling/config.json": config})
    assert read_model_settings(folder).pooling == pooling


def test_the_pooling_folder_is_the_one_modules_json_names(tmp_path: Path) -> None:
    modules = [MODULES[0], {**MODULES[1], "path": "pool"}]
    folder = _folder(tmp_path, {"modules.json": modules, "pool/config.json": _pooling(pooling_mode_cls_token=True)})
    assert read_model_settings(folder).pooling == "cls"


def test_without_a_normalize_module_vectors_are_not_normalised(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {"modules.json": MODULES[:2], "1_Pooling/config.json": MEAN})
    assert read_model_settings(folder).normalize is False


def test_a_folder_without_pooling_config_is_mean_pooled_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = _folder(tmp_path, {"modules.json": MODULES})
    with caplog.at_level(logging.INFO, logger="rag.models.model_folder"):
        settings = read_model_settings(folder)
    assert (settings.pooling, settings.normalize) == ("mean", True)
    assert [record.levelno for record in caplog.records] == [logging.WARNING]
    assert "mean pooling" in caplog.records[0].getMessage()
    assert "1_Pooling/config.json" in caplog.records[0].getMessage()


def test_a_bare_folder_keeps_the_old_behaviour_in_one_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="rag.models.model_folder"):
        assert read_model_settings(tmp_path) == ModelSettings()
    [record] = caplog.records
    assert "mean pooling" in record.getMessage()
    assert "L2 normalisation" in record.getMessage()


def test_a_complete_folder_logs_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = _folder(tmp_path, {"modules.json": MODULES, "1_Pooling/config.json": MEAN})
    with caplog.at_level(logging.INFO, logger="rag.models.model_folder"):
        read_model_settings(folder)
    assert caplog.records == []


@pytest.mark.parametrize(
    ("config", "prompts"),
    [
        ({"prompts": {"query": "query: ", "passage": "passage: "}}, Prompts("query: ", "passage: ")),
        (
            {"prompts": {"query": "Represent this sentence for searching relevant passages: "}},
            Prompts("Represent this sentence for searching relevant passages: ", ""),
        ),
        ({"prompts": {"query": "q: ", "document": "d: ", "passage": "p: "}}, Prompts("q: ", "d: ")),
        ({"prompts": {"query": "q: ", "text": "t: "}, "default_prompt_name": "text"}, Prompts("q: ", "t: ")),
        ({"prompts": {}, "default_prompt_name": None}, Prompts()),
        ({"__version__": {"sentence_transformers": "2.0.0"}}, Prompts()),
    ],
    ids=["e5", "bge", "document before passage", "default prompt", "empty", "no prompts"],
)
def test_prompts_come_from_config_sentence_transformers(
    tmp_path: Path, config: dict[str, Any], prompts: Prompts
) -> None:
    folder = _folder(tmp_path, {"modules.json": MODULES, "1_Pooling/config.json": MEAN})
    _folder(folder, {"config_sentence_transformers.json": config})
    assert read_model_settings(folder).prompts == prompts


@pytest.mark.parametrize(
    ("files", "file", "field"),
    [
        (
            {"1_Pooling/config.json": _pooling(pooling_mode_max_tokens=True)},
            "1_Pooling/config.json",
            "pooling_mode_max_tokens",
        ),
        (
            {"1_Pooling/config.json": _pooling(pooling_mode_weightedmean_tokens=True)},
            "1_Pooling/config.json",
            "pooling_mode_weightedmean_tokens",
        ),
        ({"1_Pooling/config.json": _pooling(pooling_mode_future=True)}, "1_Pooling/config.json", "pooling_mode_future"),
        ({"1_Pooling/config.json": _pooling()}, "1_Pooling/config.json", "pooling_mode_*"),
        (
            {"1_Pooling/config.json": _pooling(pooling_mode_cls_token=True, pooling_mode_mean_tokens=True)},
            "1_Pooling/config.json",
            "pooling_mode_*",
        ),
        ({"1_Pooling/config.json": {"pooling_mode": "max"}}, "1_Pooling/config.json", "pooling_mode"),
        ({"1_Pooling/config.json": {**MEAN, "include_prompt": False}}, "1_Pooling/config.json", "include_prompt"),
        ({"1_Pooling/config.json": "{not json"}, "1_Pooling/config.json", "(file)"),
        (
            {"modules.json": [*MODULES, {"path": "3_Dense", "type": "sentence_transformers.models.Dense"}]},
            "modules.json",
            "[3].type",
        ),
        (
            {"config_sentence_transformers.json": {"prompts": ["query: "]}},
            "config_sentence_transformers.json",
            "prompts",
        ),
        (
            {"config_sentence_transformers.json": {"prompts": {"query": "q: "}, "default_prompt_name": "text"}},
            "config_sentence_transformers.json",
            "default_prompt_name",
        ),
    ],
    ids=[
        "max pooling",
        "weighted mean pooling",
        "unknown flag",
        "no mode",
        "two modes",
        "unknown mode string",
        "prompt excluded from pooling",
        "broken json",
        "dense module",
        "prompts not a mapping",
        "default prompt missing",
    ],
)
def test_a_setting_the_embedder_cannot_honour_is_refused_naming_file_and_field(
    tmp_path: Path, files: dict[str, Any], file: str, field: str
) -> None:
    folder = _folder(tmp_path, {"modules.json": MODULES, "1_Pooling/config.json": MEAN})
    _folder(folder, files)
    with pytest.raises(EmbedderConfigError) as refused:
        read_model_settings(folder)
    assert (refused.value.path, refused.value.field) == (str(folder / file), field)
    assert str(refused.value).startswith(f"{folder / file}: {field}: ")
    assert isinstance(refused.value, EmbedderUnavailable), "startup turns it into one StartupError line"
