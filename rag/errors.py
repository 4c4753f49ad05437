"""rag errors: extraction, embedding and model failures, each carrying what a caller needs."""

from __future__ import annotations


class RagError(Exception):
    """Base of every rag failure."""


class EmbedderUnavailable(RagError):
    """The embedding model cannot be loaded or reached."""


class ModelError(RagError):
    """The chat or embedding API failed."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class ModelTimeout(ModelError):
    """The model API did not answer in time."""
