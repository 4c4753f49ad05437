"""rag errors: extraction, embedding and model failures, each carrying what a caller needs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

Detail = str | int
"""A value a failure's wording needs: a name, a number, a size in bytes."""


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
    """A file or URL could not be turned into text; the message is one line an admin can act on.

    The message is the operator's English, technical detail included. `reason` names the failure with an id
    (`no_text_pdf`, `url_status`) that a chat words in its own language, and `details` holds the values that
    wording needs (sizes in bytes, names, numbers), so nothing above rag has to read the English.
    """

    def __init__(self, message: str, *, reason: str = "unreadable", **details: Detail) -> None:
        super().__init__(message)
        self.reason = reason
        self.details: dict[str, Detail] = details


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


class OcrTimeout(ExtractionError):
    """Tesseract did not read an image within its time."""


class FetchError(ExtractionError):
    """A URL could not be fetched within the limits and rules."""


@dataclass(frozen=True, slots=True)
class FaqProblem:
    """One problem of an FAQ sheet: its row as a person counts it (0: the file as a whole), the operator's English
    message, and the problem's id (`no_answer`) with the values a chat's wording of it needs."""

    row: int
    message: str
    reason: str
    details: Mapping[str, Detail] = field(default_factory=dict)


class FaqImportError(RagError):
    """An FAQ sheet has problems; `problems` lists (row number, message), rows counted as a person sees them,
    and `found` the same problems with their ids and details."""

    def __init__(self, found: list[FaqProblem]) -> None:
        problems = [(problem.row, problem.message) for problem in found]
        shown = "; ".join(f"row {row}: {message}" if row else message for row, message in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        super().__init__(f"{shown}{more}")
        self.found = found
        self.problems = problems


class InvalidRule(RagError):
    """A chunking rule value is out of range; names the field and the allowed range."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class RerankerError(ModelError):
    """The reranker failed (unreachable, slow, refused, or answered nonsense); the turn goes on without reranking."""
