"""The plain conversation without retrieval (chat_stream): its prompt and its replies when no model answers."""

from __future__ import annotations

from typing import Final

from rag.config import AnswerConfig
from rag.ports import ChatModel
from rag.prompt import PromptTemplate

CHAT_SYSTEM: Final = """\
You are a helpful assistant in a team chat. Answer the user's latest message briefly and clearly, in the \
language they wrote it in. If you do not know something, say so rather than guess."""
CHAT_TEMPLATE: Final = PromptTemplate(system=CHAT_SYSTEM, user="{{query}}")
NO_CHAT_MODEL: Final = "Sorry, no chat model is set up here, so I can only answer questions from the knowledge bases."
MODEL_SILENT: Final = "Sorry, the chat model did not answer. Please try again in a moment."


def chat_config(model: ChatModel | None) -> AnswerConfig:
    """How chat_stream answers: the chat prompt, no FAQ shortcut, and a fixed apology when no model answers."""
    return AnswerConfig(
        template=CHAT_TEMPLATE,
        answer_faq_directly=False,
        fallback="fixed",
        fallback_text=NO_CHAT_MODEL if model is None else MODEL_SILENT,
    )
