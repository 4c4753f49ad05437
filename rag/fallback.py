"""Answers without a chat model: an FAQ answer or quoted passages, an apology, fixed text, and source lines."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from rag.types import Candidate

# A sentence ends after ASCII . ! ? or an ellipsis followed by whitespace, after full-width 。！？, or at a line end.
_SENTENCE: Final = re.compile(r".*?(?:[.!?…](?=\s|$)|[。！？]|\n|$)", re.DOTALL)


def fixed_answer(text: str) -> str:
    """A configured fixed reply, stripped; ValueError when it is empty (a misconfiguration, not an answer)."""
    answer = text.strip()
    if not answer:
        raise ValueError("the fixed fallback answer is empty")
    return answer


def faq_answers(candidate: Candidate) -> list[str]:
    """An FAQ's answers from metadata["answers"], non-empty and stripped (empty for a plain chunk)."""
    answers = candidate.metadata.get("answers")
    if candidate.kind != "faq" or not isinstance(answers, list | tuple):
        return []
    return [text for answer in answers if (text := str(answer).strip())]


def _sentences(text: str) -> list[str]:
    return [piece for piece in _SENTENCE.findall(text) if piece]


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in text.split("\n"))


def _quoted_passage(text: str, marker: str, room: int) -> str | None:
    """The longest run of whole sentences of `text` quoted with `marker` in `room` characters, or None."""
    best: str | None = None
    taken = ""
    for sentence in _sentences(text):
        taken += sentence
        rendered = _quote(taken.strip()) + marker
        if len(rendered) > room:
            break
        best = rendered
    return best


def _clipped(text: str, marker: str, room: int) -> str:
    """`text` quoted and cut at a word (or, without spaces, a character) with an ellipsis, to fit `room`."""
    text = " ".join(text.split())
    if len("> ") + len(text) + len(marker) <= room:
        return f"> {text}{marker}"
    space = room - len("> ") - len("…") - len(marker)
    if space <= 0:
        return ""
    head = text[:space]
    if " " in head[space // 2 :]:
        head = head[: head.rindex(" ")]
    return f"> {head.rstrip()}…{marker}"


def extractive_answer(query: str, passages: Sequence[Candidate], *, max_chars: int = 1200) -> str:
    """An answer made from the sources themselves.

    When the top passage is an FAQ, its first answer verbatim and whole (curated text is never cut).
    Otherwise the top passages as blockquotes cut at sentence ends, each followed by its source number ([1]
    is `passages[0]`), `max_chars` at most in all. With nothing to quote, "" (the caller says nothing was found,
    in its own words).
    """
    if passages and (answers := faq_answers(passages[0])):
        return answers[0]
    if passages and passages[0].kind == "faq" and passages[0].text.strip():
        return passages[0].text.strip()
    blocks: list[str] = []
    used = 0
    for number, candidate in enumerate(passages, start=1):
        answers = faq_answers(candidate)
        text = "\n".join(line.strip() for line in (answers[0] if answers else candidate.text).splitlines())
        text = re.sub(r"\n{2,}", "\n", text).strip()
        if not text:
            continue
        separator = 2 if blocks else 0  # blank line between quotes
        room = max_chars - used - separator
        block = _quoted_passage(text, f" [{number}]", room)
        if block is None and not blocks:
            block = _clipped(text, f" [{number}]", room)  # always quote something from the best passage
        if not block:
            break
        blocks.append(block)
        used += separator + len(block)
    return "\n\n".join(blocks)
