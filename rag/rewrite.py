"""Query rewriting: turn a follow-up question into one that stands alone, with a chat model or without one."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from rag.errors import ModelError
from rag.ports import ChatModel
from rag.types import ChatMessage

log = logging.getLogger(__name__)

RewriteMethod = Literal["none", "rules", "model", "fallback"]
Round = tuple[str, str]
"""One earlier exchange: (user question, assistant answer); the answer may be empty."""


@dataclass(frozen=True, slots=True)
class RewriteResult:
    """The query to search with, how it was obtained, and why (for logs and the turn record)."""

    text: str
    method: RewriteMethod
    reason: str


class Rewriter(Protocol):
    """Makes a follow-up query self-contained, given the earlier rounds (oldest first)."""

    async def rewrite(self, query: str, history: Sequence[Round]) -> RewriteResult:
        """The standalone query; the raw query when nothing needs or can be done."""
        ...


_SYSTEM = """\
Rewrite the user's latest question so that it can be understood without the conversation: replace pronouns \
and references (it, they, he, this, 它, 他, 这个, 那个) with what they refer to, and fill in words the question \
leaves out. Keep the question's language, wording and meaning; change nothing else. If it already stands alone, \
repeat it unchanged. Do not answer it. Output ONLY the rewritten question, on one line.
改写用户的最新问题，使它脱离对话也能看懂：把代词和指代换成所指的内容，补全省略的部分；保持原来的语言和意思，\
不要回答问题，只输出改写后的问题。

Example 1
User: Who founded Tesla?
Assistant: Tesla was founded in 2003 by Martin Eberhard and Marc Tarpenning.
Latest question: When did it go public?
Rewritten question: When did Tesla go public?

Example 2
User: What is the capital of Australia?
Assistant: Canberra.
Latest question: How many people live there?
Rewritten question: How many people live in Canberra?

Example 3
User: 上海的天气怎么样
Assistant: 上海今天多云，气温 18 到 24 度。
Latest question: 那北京呢
Rewritten question: 北京的天气怎么样

Example 4
User: 你看过《流浪地球》吗
Assistant: 看过，特效很震撼。
Latest question: 它的导演是谁
Rewritten question: 《流浪地球》的导演是谁"""

# How much history reaches the model: the last rounds, each answer cut short (follow-ups refer to recent turns).
_MAX_ROUNDS = 5
_MAX_ANSWER_CHARS = 300

_PREFIX = re.compile(
    r"^\s*(?:rewritten (?:question|query)|standalone question|question|改写后的问题|改写后|改写|问题)\s*[:：]\s*",
    re.IGNORECASE,
)
_QUOTES = "\"'`\u201c\u201d\u2018\u2019\u300c\u300d"
_ANSWER_OPENERS = (
    "sure",
    "certainly",
    "of course",
    "the answer",
    "here is",
    "here's",
    "answer:",
    "好的",
    "当然",
    "答案",
)


def _prompt(query: str, history: Sequence[Round]) -> list[ChatMessage]:
    lines = []
    for user, assistant in history[-_MAX_ROUNDS:]:
        lines.append(f"User: {user.strip()}")
        if assistant.strip():
            answer = " ".join(assistant.split())
            cut = answer[:_MAX_ANSWER_CHARS] + ("…" if len(answer) > _MAX_ANSWER_CHARS else "")
            lines.append(f"Assistant: {cut}")
    conversation = "\n".join(lines)
    user = f"{conversation}\nLatest question: {query.strip()}\nRewritten question:"
    return [ChatMessage(role="system", content=_SYSTEM), ChatMessage(role="user", content=user)]


def _clean(output: str) -> str:
    text = output.split("</think>")[-1].strip()  # reasoning models may think aloud first
    text = _PREFIX.sub("", text).strip()
    if len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES:
        text = text[1:-1].strip()
    return text


def _rejection(text: str, query: str, max_ratio: float) -> str | None:
    """Why the model's output cannot be used as the query, or None when it can."""
    if not text:
        return "empty output"
    if "\n" in text:
        return "output has several lines, looks like an answer"
    if text.lower().startswith(_ANSWER_OPENERS):
        return "output looks like an answer"
    limit = max_ratio * len(query) + 100
    if len(text) > limit:
        return f"output too long ({len(text)} chars > {limit:.0f})"
    return None


class LlmRewriter:
    """Rewrites with a chat model (few-shot prompt); falls back to the raw query on any failure or odd output."""

    def __init__(self, model: ChatModel, *, timeout: float = 5.0, max_ratio: float = 3.0) -> None:
        self._model = model
        self._timeout = timeout
        self._max_ratio = max_ratio

    async def rewrite(self, query: str, history: Sequence[Round]) -> RewriteResult:
        """The model's standalone question; the raw query (method `fallback`) when the model fails or misbehaves."""
        if not history:
            return RewriteResult(query, "none", "no history")
        try:
            async with asyncio.timeout(self._timeout):
                output = await self._model.complete(_prompt(query, history))
        except TimeoutError:
            return self._fallback(query, f"timeout after {self._timeout:g}s")
        except ModelError as exc:
            return self._fallback(query, f"model error: {exc}")
        text = _clean(output)
        problem = _rejection(text, query, self._max_ratio)
        if problem is not None:
            return self._fallback(query, problem)
        return RewriteResult(text, "model", "unchanged" if text == query.strip() else "rewritten")

    def _fallback(self, query: str, reason: str) -> RewriteResult:
        log.warning("rewrite=fallback model=%s reason=%r", self._model.model_id, reason)
        return RewriteResult(query, "fallback", reason)
