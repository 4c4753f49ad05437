"""rag errors: extraction, embedding and model failures, each carrying what a caller needs."""

from __future__ import annotations


class RagError(Exception):
    """Base of every rag failure."""


class EmbedderUnavailable(RagError):
    """The embedding model cannot be loaded or reached."""


class EmbedderConfigError(EmbedderUnavailable):
    """A model folder's sentence-transformers config asks for what the ONNX embedder cannot do; names file and field."""

    def __init__(self, path: str, field: str, message: str) -> None:
        super().__init__(f"{path}: {field}: {message}")
        self.path = path
        self.field = field


class ModelError(RagError):
    """The chat or embedding API failed."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class ModelTimeout(ModelError):
    """The model API did not answer in time."""


class ExtractionError(RagError):
    """A file or URL could not be turned into text; the message is one line an admin can act on."""


class UnsupportedType(ExtractionError):
    """The content is of a type ragbot cannot read."""


class DocumentTooLarge(ExtractionError):
    """The file, or what it would unpack to, is over a size limit."""


class EncryptedDocument(ExtractionError):
    """The document is password-protected."""


class CorruptDocument(ExtractionError):
    """The content does not parse as the type it claims to be."""


class NoTextFound(ExtractionError):
    """The document holds no extractable text (for example a scanned PDF)."""


class FetchError(ExtractionError):
    """A URL could not be fetched within the limits and rules."""


class FaqImportError(RagError):
    """An FAQ sheet has problems; `problems` lists (row number, message), rows counted as a person sees them."""

    def __init__(self, problems: list[tuple[int, str]]) -> None:
        shown = "; ".join(f"row {row}: {message}" if row else message for row, message in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        super().__init__(f"{shown}{more}")
        self.problems = problems


class InvalidRule(RagError):
    """A chunking rule value is out of range; names the field and the allowed range."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class RerankerError(ModelError):
    """The reranker failed (unreachable, slow, refused, or answered nonsense); the turn goes on without reranking."""
