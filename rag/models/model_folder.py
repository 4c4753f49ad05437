"""What a sentence-transformers model folder says about pooling, normalisation and query/passage prompts."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rag.errors import EmbedderConfigError
from rag.ports import EmbedKind

log = logging.getLogger(__name__)

Pooling = Literal["mean", "cls", "lasttoken"]

# The flags sentence-transformers' Pooling module writes to its config.json, and the mode each one turns on.
_POOLING_FLAGS: dict[str, Pooling] = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_lasttoken": "lasttoken",
}
_POOLING_NAMES: dict[str, Pooling] = {"mean": "mean", "cls": "cls", "lasttoken": "lasttoken"}
# modules.json types the ONNX export covers (Transformer) or the embedder applies itself; any other module (Dense,
# say) would change the vectors, so a folder that lists one is refused rather than embedded wrongly.
_MODULES = ("Transformer", "Pooling", "Normalize")
# Prompt names sentence-transformers' encode_query / encode_document look for, in its order.
_QUERY_NAMES = ("query",)
_PASSAGE_NAMES = ("document", "passage", "corpus")


@dataclass(frozen=True, slots=True)
class Prompts:
    """The text put before a query and before a passage ("" for none)."""

    query: str = ""
    passage: str = ""

    def of(self, kind: EmbedKind) -> str:
        """The prompt for `kind`."""
        return self.query if kind == "query" else self.passage


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """How token embeddings become one vector, and what goes before each text."""

    pooling: Pooling = "mean"
    normalize: bool = True
    prompts: Prompts = field(default_factory=Prompts)


def read_model_settings(model_dir: Path) -> ModelSettings:
    """The folder's settings; a missing file means the all-MiniLM-L6-v2 defaults (said in one log line).

    Raises EmbedderConfigError, naming the file and the field, for a setting the embedder cannot honour.
    """
    assumed: list[str] = []
    pooling_file: Path | None
    modules = _read(model_dir / "modules.json")
    if modules is None:
        pooling_file, normalize = model_dir / "1_Pooling" / "config.json", True
        assumed.append("L2 normalisation (no modules.json)")
    else:
        pooling_file, normalize = _modules(model_dir, modules)
    pooling: Pooling = "mean"
    pooling_config = _read(pooling_file) if pooling_file is not None else None
    if pooling_file is not None and pooling_config is not None:
        pooling = _pooling(pooling_file, pooling_config)
    else:
        where = pooling_file.relative_to(model_dir) if pooling_file else "Pooling module in modules.json"
        assumed.append(f"mean pooling (no {where})")
    if assumed:
        log.warning("model_dir=%s assumed %s", model_dir, " and ".join(assumed))
    st_config = _read(model_dir / "config_sentence_transformers.json")
    prompts = (
        _prompts(model_dir / "config_sentence_transformers.json", st_config) if st_config is not None else Prompts()
    )
    return ModelSettings(pooling, normalize, prompts)


def _read(path: Path) -> Any:
    """The file's JSON, or None when it does not exist."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EmbedderConfigError(str(path), "(file)", f"cannot be read as JSON: {exc}") from exc


def _modules(model_dir: Path, modules: Any) -> tuple[Path | None, bool]:
    """The Pooling module's config file (None if it lists none) and whether a Normalize module follows."""
    path = model_dir / "modules.json"
    if not isinstance(modules, list):
        raise EmbedderConfigError(str(path), "(file)", "must be a list of modules")
    pooling_file, normalize = None, False
    for index, module in enumerate(modules):
        kind = str(module.get("type", "")) if isinstance(module, dict) else ""
        name = kind.rpartition(".")[2]
        if name not in _MODULES:
            raise EmbedderConfigError(
                str(path), f"[{index}].type", f"{kind or 'missing'}: the ONNX embedder runs only {', '.join(_MODULES)}"
            )
        if name == "Pooling":
            pooling_file = model_dir / str(module.get("path", "1_Pooling")) / "config.json"
        normalize = normalize or name == "Normalize"
    return pooling_file, normalize


def _pooling(path: Path, config: Any) -> Pooling:
    if not isinstance(config, dict):
        raise EmbedderConfigError(str(path), "(file)", "must be a JSON object")
    if config.get("include_prompt", True) is not True:
        raise EmbedderConfigError(str(path), "include_prompt", "only true (prompt tokens are pooled) is supported")
    if "pooling_mode" in config:  # the string form Pooling(pooling_mode=...) also accepts
        mode = config["pooling_mode"]
        if mode not in _POOLING_NAMES:
            raise EmbedderConfigError(str(path), "pooling_mode", f"{mode!r} is not one of {', '.join(_POOLING_NAMES)}")
        return _POOLING_NAMES[mode]
    chosen = [flag for flag, value in config.items() if flag.startswith("pooling_mode_") and value is True]
    for flag in chosen:
        if flag not in _POOLING_FLAGS:
            raise EmbedderConfigError(str(path), flag, f"is not supported; one of {', '.join(_POOLING_FLAGS)} is")
    if len(chosen) != 1:
        raise EmbedderConfigError(
            str(path), "pooling_mode_*", f"exactly one mode must be true, found {', '.join(chosen) or 'none'}"
        )
    return _POOLING_FLAGS[chosen[0]]


def _prompts(path: Path, config: Any) -> Prompts:
    """The query and passage prompts as sentence-transformers picks them: by name, else the default prompt."""
    if not isinstance(config, dict):
        raise EmbedderConfigError(str(path), "(file)", "must be a JSON object")
    prompts = config.get("prompts") or {}
    if not isinstance(prompts, dict) or not all(isinstance(text, str) for text in prompts.values()):
        raise EmbedderConfigError(str(path), "prompts", "must map prompt names to texts")
    default_name = config.get("default_prompt_name")
    if default_name is not None and default_name not in prompts:
        raise EmbedderConfigError(str(path), "default_prompt_name", f"{default_name!r} is not among the prompts")
    default = prompts[default_name] if default_name is not None else ""

    def first(names: tuple[str, ...]) -> str:
        return next((prompts[name] for name in names if name in prompts), default)

    return Prompts(query=first(_QUERY_NAMES), passage=first(_PASSAGE_NAMES))
