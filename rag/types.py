"""Values that travel through rag: chat messages and vectors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Vector = list[float]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of a chat-model prompt."""

    role: Literal["system", "user", "assistant"]
    content: str
