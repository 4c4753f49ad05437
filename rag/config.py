"""Frozen configuration for rag's parts; bot.app.settings builds these."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from rag.extractive import ExtractiveConfig
from rag.prompt import DEFAULT, PromptTemplate


@dataclass(frozen=True, slots=True)
class EmbedderConfig:
    """Which embedder to use and how to reach or load it."""

    provider: Literal["local", "openai"]
    model: str
    model_dir: Path | None
    cache_dir: Path
    max_tokens: int = 256
    batch_size: int = 64
    base_url: str | None = None
    api_key: str | None = None
    dimension: int | None = None


@dataclass(frozen=True, slots=True)
class ChatModelConfig:
    """An OpenAI-compatible chat model endpoint."""

    model: str
    base_url: str | None
    api_key: str | None
    timeout: float = 60.0
    max_retries: int = 2


Fallback = Literal["fixed", "model", "extractive"]


@dataclass(frozen=True, slots=True)
class AnswerConfig:
    """How the answer is written: context budget, FAQ priority, fallback."""

    budget: int = 6000
    faq_priority: bool = True
    direct_answer_threshold: float = 0.9
    answer_faq_directly: bool = True
    fallback: Fallback = "extractive"
    fallback_text: str = "I could not find an answer to that in the knowledge base."
    template: PromptTemplate = field(default_factory=lambda: DEFAULT)
    # Seconds an answer's delivery may take in all (a model that trickles would keep it open for ever): past it,
    # the answer ends with what was written and a note.
    deadline: float = 180.0
    # Without a model: how long the quoted sentences may be and where sentence embeddings are trusted.
    extractive: ExtractiveConfig = field(default_factory=ExtractiveConfig)
