"""English ellipsis: "What about Telegram?" after "Does ragbot support Slack?" asks the same of Telegram."""

from __future__ import annotations

import re

from rag.rewrite_rules.phrases import Phrase, phrases

# A bare noun phrase led by "what/how about" or "and": the rest of the question is the previous one's.
_REMNANT = re.compile(r"^\s*(?:and\s+)?(?:(?:what|how)\s+about\s+)?(?P<x>[^?!.,;:]+?)\s*[?!.]*\s*$", re.IGNORECASE)
_LEAD = re.compile(r"^\s*(?:and\b|(?:what|how)\s+about\b)", re.IGNORECASE)


def _remnant(query: str) -> Phrase | None:
    """The noun phrase a "What about X?" / "And X?" question consists of, or None when it is any other question."""
    match = _REMNANT.match(query)
    if match is None or _LEAD.match(query) is None:
        return None
    found = phrases(match.group("x"))
    return found[0] if len(found) == 1 and found[0].text == match.group("x") else None


def is_remnant(query: str) -> bool:
    """Whether the query is a bare "What about X?" / "How about X?" / "And X?" remnant."""
    return _remnant(query) is not None


def _parallel(remnant: Phrase, previous: list[Phrase]) -> Phrase | None:
    """The phrase of the previous question that the remnant contrasts with: the same head noun, else the last name
    when the remnant is a name ("Slack" for "Telegram"); None when there is no such single phrase."""
    same_head = [phrase for phrase in previous if not phrase.name and phrase.key == remnant.key]
    if not remnant.name:
        return same_head[-1] if same_head else None
    names = [phrase for phrase in previous if phrase.name and phrase.key != remnant.key]
    same_head = [phrase for phrase in previous if phrase.name and phrase.key == remnant.key]
    candidates = same_head or names
    return candidates[-1] if candidates else None


def _aligned_end(previous: str, end: int, remnant: str) -> int:
    """`end` moved past words the remnant repeats after its name: "the Slack| adapter" for "the Telegram adapter"."""
    words = remnant.split()
    for size in range(len(words) - 1, 0, -1):
        tail = " ".join(words[-size:])
        if (
            previous[end:].lstrip().lower().startswith(tail.lower() + " ")
            or previous[end:].strip(" ?").lower() == tail.lower()
        ):
            return previous.lower().index(tail.lower(), end) + len(tail)
    return end


def complete_ellipsis(query: str, previous: str) -> tuple[str, str] | None:
    """The previous question with its parallel phrase swapped for the query's ("Does ragbot support Telegram?"),
    and what was done; None when the query is no bare remnant or the previous question has no parallel phrase."""
    remnant = _remnant(query)
    if remnant is None:
        return None
    old = _parallel(remnant, phrases(previous))
    if old is None or old.text.lower() == remnant.text.lower():
        return None
    end = _aligned_end(previous, old.start + len(old.text), remnant.text)
    text = previous[: old.start] + remnant.text + previous[end:]
    return text, f"ellipsis {old.text}->{remnant.text}"
