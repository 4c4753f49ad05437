"""The extractive answer: the few sentences of the selected passages that answer the question, cited.

Pure functions, no I/O. Passages are cut into units (sentences at Chinese and English stops, list items and
fenced code blocks whole), each unit is scored against the question (term overlap weighted by rarity, the
passage's rank, and embedding similarity when the caller has vectors), and the best units are quoted in
document order, each run followed by its source number ("[1]" is `passages[0]`, as `format_sources` prints),
within a character budget.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from rag.fusion import cosine
from rag.types import Candidate, Vector

Terms = Callable[[str], Sequence[str]]
"""Text -> its lexical terms (jieba search-mode terms in the product)."""

# Ending a unit: ASCII . ! ? and … before whitespace or the end (so 3.5 and e.g.x stay whole), full-width
# 。！？ anywhere; closing quotes and brackets after a stop stay with its sentence.
_CLOSERS: Final = "\u201d\u2019\"')\\]）】」』"
_STOP: Final = re.compile(rf"(?:[.!?…]+(?=[{_CLOSERS}]*(?:\s|$))|[。！？]+)[{_CLOSERS}]*")
# Abbreviations whose full stop does not end a sentence (lower-cased, without the stop).
_ABBREVIATIONS: Final = frozenset(
    {"e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "prof", "no", "fig", "cf", "approx"}
)
_LIST_ITEM: Final = re.compile(r"^\s*(?:(?:[-*+•·]|\d{1,3}[.)]|[a-zA-Z][.)])\s+|\d{1,3}、)")
_OWN_LINE: Final = re.compile(r"^\s*(?:#{1,6}\s|\||>)")
_HEADING: Final = re.compile(r"^\s*#{1,6}\s")
_FENCE: Final = re.compile(r"^\s*(```|~~~)")
_HAN: Final = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
# Openings that lean on the sentence before ("This means…", "它的…"): that sentence is quoted with them.
_LEANING_EN: Final = frozenset(
    {"this", "that", "these", "those", "it", "its", "they", "their", "them", "he", "she", "his", "her", "such"}
    | {"however", "therefore", "thus", "otherwise"}
)
_LEANING_ZH: Final = ("它", "他", "她", "其", "该", "此", "这", "那", "但", "而", "因此", "所以", "同时", "并且")
_GAP: Final = "…"
_WORD_RUN: Final = re.compile(
    r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[^\W_\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+"
)


# The words that make a question a question, not what it is about: a sentence holding only these ("| command |
# what it does |") answers nothing. Cut by the same `terms` as the question, so stemming applies alike.
QUESTION_WORDS: Final = (
    *("how", "what", "which", "who", "whom", "whose", "when", "where", "why", "do", "does", "did", "can", "could"),
    *("should", "would", "i", "me", "my", "you", "your", "we", "our"),
    *("如何", "怎么", "怎样", "怎么样", "什么", "哪", "哪些", "哪个", "哪里", "为什么", "为何", "吗", "呢", "是否"),
    *("能否", "可以", "我", "我们", "你", "你们"),
)


@dataclass(frozen=True, slots=True)
class ExtractiveConfig:
    """How long the extractive answer may be and where embedding similarity is trusted.

    `embed_languages` are the query languages ("zh", "en") the embedding model serves; None means all.
    """

    max_chars: int = 400
    embed_languages: frozenset[str] | None = frozenset({"en"})
    # A unit is quoted when it scores at least this share of the best unit's score: "the few that answer",
    # not a fill of the budget with weak matches (0.4 and 0.7 measured in bench/RESULTS.md, issue 12).
    keep_ratio: float = 0.5
    # Weight of the passage's rank (1 for the first, falling as 1/rank): the ranking is evidence too, but a
    # small one, or the first passage fills the budget (0 and 0.5 measured in bench/RESULTS.md).
    rank_weight: float = 0.2
    # Weight of the cosine similarity to the question, when unit vectors are given; untuned (no English set
    # with gold answers yet), half the lexical score's range.
    vector_weight: float = 0.5


@dataclass(frozen=True, slots=True)
class Unit:
    """One quotable piece of a passage: a sentence, a list item or a fenced code block."""

    passage: int
    index: int
    text: str
    starts_line: bool = False
    code: bool = False


def split_units(text: str, passage: int = 0) -> list[Unit]:
    """`text` cut into sentences (Chinese and English stops), list items and whole fenced code blocks."""
    pieces: list[tuple[str, bool, bool]] = []  # (text, starts a line, is code)
    lines = text.replace("\r\n", "\n").split("\n")
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph and _LIST_ITEM.match(paragraph[0]):
            pieces.append((_join_lines(paragraph), True, False))  # a list item is quoted whole
        elif paragraph:
            pieces.extend((sentence, first, False) for first, sentence in _sentences(_join_lines(paragraph)))
        paragraph.clear()

    at = 0
    while at < len(lines):
        line = lines[at]
        fence = _FENCE.match(line)
        if fence:
            flush()
            end = next((n for n in range(at + 1, len(lines)) if lines[n].strip().startswith(fence.group(1))), None)
            block = lines[at : (end if end is not None else len(lines) - 1) + 1]
            pieces.append(("\n".join(block).strip("\n"), True, True))
            at = (end if end is not None else len(lines)) + 1
            continue
        if not line.strip():
            flush()
        elif _LIST_ITEM.match(line) or _OWN_LINE.match(line):
            flush()
            paragraph.append(line.strip())
            if _OWN_LINE.match(line):
                flush()
        else:
            paragraph.append(line.strip())
        at += 1
    flush()
    return [
        Unit(passage, index, piece, starts_line, code)
        for index, (piece, starts_line, code) in enumerate(p for p in pieces if p[0].strip())
    ]


def _join_lines(lines: Sequence[str]) -> str:
    """Soft-wrapped lines as one paragraph: Chinese joins without a space, other text with one."""
    joined = lines[0]
    for line in lines[1:]:
        joined += ("" if _HAN.match(joined[-1:]) or _HAN.match(line[:1]) else " ") + line
    return joined


def _sentences(paragraph: str) -> list[tuple[bool, str]]:
    """The paragraph's sentences, the first flagged as starting a line."""
    found: list[str] = []
    start = 0
    for stop in _STOP.finditer(paragraph):
        if stop.group().startswith(".") and _abbreviated(paragraph[start : stop.start()]):
            continue
        found.append(paragraph[start : stop.end()].strip())
        start = stop.end()
    found.append(paragraph[start:].strip())
    return [(n == 0, sentence) for n, sentence in enumerate(s for s in found if s)]


def _abbreviated(head: str) -> bool:
    words = head.split()
    last = words[-1].lower() if words else ""
    return last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha())


def plain_terms(text: str) -> list[str]:
    """Terms without a dictionary: lower-cased word runs, and overlapping character pairs of Chinese runs
    (the usual dictionary-free unit for Chinese matching, since most Chinese words are two characters)."""
    found: list[str] = []
    for run in _WORD_RUN.findall(text.lower()):
        if _HAN.match(run):
            found += [run[n : n + 2] for n in range(len(run) - 1)] if len(run) > 1 else [run]
        else:
            found.append(run)
    return found


def leans_on_previous(unit: Unit) -> bool:
    """The unit opens with a word that points back ("This", "It", "它", "该"): it needs the sentence before."""
    text = unit.text.lstrip("\"'\u201c\u2018(（「 ")
    if text.startswith(_LEANING_ZH):
        return True
    first = re.match(r"[A-Za-z]+", text)
    return first is not None and first.group().lower() in _LEANING_EN


@functools.lru_cache(maxsize=8)
def _question_terms(terms: Terms) -> frozenset[str]:
    """QUESTION_WORDS as `terms` cuts them: once per analyzer, not once per answer."""
    return frozenset(term for word in QUESTION_WORDS for term in terms(word))


def score_units(
    query: str,
    units: Sequence[Unit],
    terms: Terms,
    config: ExtractiveConfig,
    *,
    query_vector: Vector | None = None,
    unit_vectors: Sequence[Vector | None] | None = None,
) -> list[float]:
    """Each unit's score: the share of the question's terms it holds, each weighted by its rarity among the
    units (idf), plus the passage's rank prior and, given vectors, the cosine similarity to the question."""
    wanted = set(terms(query)) - _question_terms(terms)
    held = [set(terms(unit.text)) & wanted for unit in units]
    frequency = Counter(term for found in held for term in found)
    weight = {term: math.log(1 + len(units) / count) for term, count in frequency.items()}
    total = sum(weight.values()) or 1.0
    scores = []
    for n, unit in enumerate(units):
        score = sum(weight[term] for term in held[n]) / total
        score += config.rank_weight / (1 + unit.passage)
        vector = unit_vectors[n] if unit_vectors is not None else None
        if query_vector is not None and vector is not None:
            score += config.vector_weight * max(0.0, cosine(query_vector, vector))
        # A heading names what follows; alone it answers nothing ("## How a question is answered").
        quotable = not _HEADING.match(unit.text)
        scores.append(score if quotable and (held[n] or vector is not None) else 0.0)
    return scores


def passage_units(passages: Sequence[Candidate], whole_up_to: int = 400) -> list[Unit]:
    """Every passage's units, in rank order. An FAQ counts by its first answer, one unit when it is at most
    `whole_up_to` characters (curated text is quoted whole), else cut like any passage."""
    units: list[Unit] = []
    for number, candidate in enumerate(passages):
        answers = candidate.metadata.get("answers") if candidate.kind == "faq" else None
        if isinstance(answers, list | tuple) and answers and (answer := str(answers[0]).strip()):
            if len(answer) <= whole_up_to:
                units.append(Unit(number, 0, answer, starts_line=True))
                continue
            units += split_units(answer, number)
        else:
            units += split_units(candidate.text, number)
    return units


def select_answer(units: Sequence[Unit], scores: Sequence[float], config: ExtractiveConfig) -> str:
    """The best units (with the unit before one that leans on it) quoted in document order within the budget.

    When no unit shares a term with the question (a match by meaning alone), the top passage's opening.
    """
    if not units:
        return ""
    order = sorted(range(len(units)), key=lambda n: (-scores[n], units[n].passage, units[n].index))
    if scores[order[0]] <= 0:
        scores = [1.0 if unit.passage == units[0].passage else 0.0 for unit in units]
        order = [n for n in range(len(units)) if scores[n] > 0]
    bar = scores[order[0]] * config.keep_ratio
    taken: set[int] = set()
    answer = ""
    for n in order:
        if scores[n] < bar or n in taken:
            continue
        options = [{n}]
        if leans_on_previous(units[n]) and n > 0 and units[n - 1].passage == units[n].passage:
            options.insert(0, {n - 1, n})
        for option in options:
            rendered = render(units, taken | option)
            if len(rendered) <= config.max_chars:
                taken |= option
                answer = rendered
                break
    if not answer:  # the best unit alone is over the budget: its head, cut on a word or character boundary
        best = units[order[0]]
        marker = f" [{best.passage + 1}]"
        answer = _quote(clip(" ".join(best.text.split()), config.max_chars - len("> ") - len(marker))) + marker
    return answer


def render(units: Sequence[Unit], chosen: set[int]) -> str:
    """The chosen units quoted per passage in document order, each passage's run followed by its number."""
    blocks: list[str] = []
    picked = sorted(chosen, key=lambda n: (units[n].passage, units[n].index))
    for position, n in enumerate(picked):
        unit = units[n]
        previous = units[picked[position - 1]] if position else None
        if previous is None or previous.passage != unit.passage:
            blocks.append(unit.text)
            continue
        if unit.index != previous.index + 1:
            separator = f"\n{_GAP}\n" if unit.starts_line or previous.code else f" {_GAP} "
        elif unit.starts_line or previous.code:
            separator = "\n"
        else:
            separator = "" if _HAN.match(previous.text[-1:]) or _HAN.match(unit.text[:1]) else " "
        blocks[-1] += separator + unit.text
    numbers = sorted({units[n].passage + 1 for n in chosen})
    quoted = []
    for number, block in zip(numbers, blocks, strict=True):
        # After a closing fence the number goes on its own line, or the fence would not close.
        tail = f"\n[{number}]" if block.rstrip().endswith(("```", "~~~")) else f" [{number}]"
        quoted.append(_quote(block + tail))
    return "\n\n".join(quoted)


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in text.split("\n"))


def clip(text: str, room: int) -> str:
    """`text` within `room` characters: cut at a word boundary (or, without spaces, between characters, never
    inside one: a combining mark or a joined emoji stays with its base) and marked with an ellipsis."""
    if len(text) <= room:
        return text
    space = room - len(_GAP)
    if space <= 0:
        return ""
    head = text[:space]
    if " " in head[space // 2 :]:
        return head[: head.rindex(" ")].rstrip() + _GAP
    cut = space
    while 0 < cut < len(text) and _joined(text[cut - 1], text[cut]):
        cut -= 1
    return text[:cut] + _GAP


def _joined(before: str, after: str) -> bool:
    """Cutting between these two code points would split one user-perceived character."""
    return (
        unicodedata.category(after) in {"Mn", "Mc", "Me"}
        or after in "\u200d\ufe0f\ufe0e"
        or before == "\u200d"
        or "\U0001f3fb" <= after <= "\U0001f3ff"  # skin-tone modifiers
    )


def sentence_answer(
    query: str,
    passages: Sequence[Candidate],
    terms: Terms,
    config: ExtractiveConfig,
    *,
    query_vector: Vector | None = None,
    unit_vectors: Sequence[Vector | None] | None = None,
) -> str:
    """The extractive answer for `query` from `passages` (empty when no sentence matches the question)."""
    units = passage_units(passages, config.max_chars)
    scores = score_units(query, units, terms, config, query_vector=query_vector, unit_vectors=unit_vectors)
    return select_answer(units, scores, config)
