"""The extractive answer: the few sentences of the selected passages that answer the question, cited.

Pure functions, no I/O. Passages are cut into units (rag.units: sentences, list items, code blocks, table rows, each
under its heading), each unit is scored against the question (its share of the question's content terms weighted
by rarity, the heading and table header counting at half, a preference for instructions when the question asks how,
the passage's rank, and embedding similarity when the caller has vectors), and the best units are quoted in
document order under their headings, table rows as a table under its header row, each passage's run followed by its
source number ("[1]" is `passages[0]`, as `format_sources` prints), within a character budget.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from rag.function_words import FUNCTION_WORDS, Terms, content_terms
from rag.fusion import cosine
from rag.types import Candidate, Vector
from rag.units import Unit, split_units

__all__ = [
    "FUNCTION_WORDS",
    "ExtractiveConfig",
    "Quotes",
    "Terms",
    "Unit",
    "asks_how",
    "clip",
    "instructs",
    "leans_on_previous",
    "passage_units",
    "plain_terms",
    "render",
    "score_units",
    "select_answer",
    "select_quotes",
    "sentence_answer",
    "split_units",
]

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
# A question that asks how to do something ("how do I…", "how to…", 如何, 怎么; not "怎么样", how something is).
_ASKS_HOW: Final = re.compile(
    r"\bhow\s+(?:do|does|can|could|should|would|may|to|is\s+\w+\s+done)\b|如何|怎么(?!样)|怎样|怎么办", re.IGNORECASE
)
# An instruction: a step of a list, a command, "To set up X, open Y", or a sentence opening with a verb of doing.
_TO_DO: Final = re.compile(r"^(?:to|first|then|next|finally)\b[^,]{0,80},", re.IGNORECASE)
_IMPERATIVES: Final = frozenset(
    (
        *("open", "click", "go", "select", "choose", "enter", "type", "install", "download", "run", "set", "add"),
        *("press", "tap", "use", "copy", "paste", "create", "sign", "log", "visit", "navigate", "follow", "connect"),
        *("send", "fill", "submit", "ask", "contact", "email", "call", "write", "make", "start", "restart", "check"),
        *("turn", "enable", "disable", "configure", "upload", "save", "update", "remove", "delete", "find", "see"),
        *("read", "request", "book", "apply", "register", "import", "export", "launch", "scan", "change", "edit"),
        *("reset", "put", "mount", "attach", "drag", "upgrade"),
    )
)
_DOING_ZH: Final = re.compile(
    r"^(?:请|先|首先|然后|接着|最后|打开|点击|进入|登录|选择|输入|运行|执行|使用|访问|填写|提交|联系|前往|下载|安装)"
    r"|点击|填写|提交|登录"
)
_STEP: Final = re.compile(r"^\s*(?:\d{1,3}[.)、]|[-*+•]\s)")
# What the heading and a table's header add to a unit's match: half of what the unit's own words do (untuned; the
# heading names what every unit under it is about, so it must not outweigh what the sentence itself says).
_CONTEXT_SHARE: Final = 0.5
# Metadata keys under which a chunker may hand down the heading path of a chunk (a string or a list of headings).
_HEADING_KEYS: Final = ("heading_path", "headings", "heading", "section")


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
    # The passage's rank scales a unit's score by 1 + rank_weight / rank: the ranking is evidence too, but a small
    # one, and it must not lift a unit that shares nothing with the question over the bar (issue 18).
    rank_weight: float = 0.2
    # Weight of the cosine similarity to the question, when unit vectors are given; untuned (no English set
    # with gold answers yet), half the lexical score's range.
    vector_weight: float = 0.5
    # How much more an instruction counts when the question asks how to do something (issue 18: "how do I set up
    # the VPN" is answered by "To set it up, open…", not by what the VPN is); untuned.
    instruction_weight: float = 0.5


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


def asks_how(query: str) -> bool:
    """The question asks how to do something ("How do I…", "how to…", 如何, 怎么)."""
    return _ASKS_HOW.search(query) is not None


def instructs(unit: Unit) -> bool:
    """The unit tells the reader what to do: a list step, a code block, "To X, do Y", or an opening verb of doing."""
    text = unit.text.lstrip("\"'\u201c\u2018(（「*_ ")
    if unit.code or _STEP.match(text) or _TO_DO.match(text) or _DOING_ZH.search(text):
        return True
    first = re.match(r"[A-Za-z]+", text)
    return first is not None and first.group().lower() in _IMPERATIVES


def _context(unit: Unit) -> str:
    return f"{unit.heading}\n{unit.header}"


def score_units(
    query: str,
    units: Sequence[Unit],
    terms: Terms,
    config: ExtractiveConfig,
    *,
    query_vector: Vector | None = None,
    unit_vectors: Sequence[Vector | None] | None = None,
) -> list[float]:
    """Each unit's score: the share of the question's content terms it holds, each weighted by its rarity among the
    units (idf), those only its heading or table header holds at half; times 1 + instruction_weight for an
    instruction when the question asks how; plus, given vectors, the cosine similarity to the question; times the
    passage's rank prior. A unit holding none of the question's content terms (and no vector) scores 0."""
    wanted = content_terms(query, terms)
    # An FAQ's question is its own text, not a heading over it: it counts in full.
    own = [content_terms(_context(unit) + unit.text if unit.faq else unit.text, terms) & wanted for unit in units]
    context = [(content_terms(_context(unit), terms) & wanted) - own[n] for n, unit in enumerate(units)]
    frequency = Counter(term for n in range(len(units)) for term in own[n] | context[n])
    weight = {term: math.log(1 + len(units) / count) for term, count in frequency.items()}
    total = sum(weight.values()) or 1.0
    how = asks_how(query)
    scores = []
    for n, unit in enumerate(units):
        score = (sum(weight[t] for t in own[n]) + _CONTEXT_SHARE * sum(weight[t] for t in context[n])) / total
        if how and instructs(unit):
            score *= 1 + config.instruction_weight
        vector = unit_vectors[n] if unit_vectors is not None else None
        if query_vector is not None and vector is not None:
            score += config.vector_weight * max(0.0, cosine(query_vector, vector))
        score *= 1 + config.rank_weight / (1 + unit.passage)
        scores.append(score if own[n] or vector is not None else 0.0)
    return scores


def _heading_of(metadata: Mapping[str, Any]) -> str:
    """The heading path a chunker handed down in metadata, as one line ("Handbook > Leave"), or ""."""
    for key in _HEADING_KEYS:
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
        if isinstance(value, list | tuple) and (parts := [str(part).strip() for part in value if str(part).strip()]):
            return " > ".join(parts)
    return ""


def passage_units(passages: Sequence[Candidate], whole_up_to: int = 400) -> list[Unit]:
    """Every passage's units, in rank order. An FAQ counts by its first answer under its question (the heading: it
    counts toward the match, and is shown above the quote), one unit when the answer is at most `whole_up_to`
    characters (curated text is quoted whole), else cut like any passage."""
    units: list[Unit] = []
    for number, candidate in enumerate(passages):
        answers = candidate.metadata.get("answers") if candidate.kind == "faq" else None
        if isinstance(answers, list | tuple) and answers and (answer := str(answers[0]).strip()):
            question = " ".join(str(candidate.metadata.get("question") or "").split())
            if len(answer) <= whole_up_to:
                units.append(Unit(number, 0, answer, starts_line=True, heading=question, faq=True))
                continue
            units += [replace(unit, faq=True) for unit in split_units(answer, number, question)]
        else:
            units += split_units(candidate.text, number, _heading_of(candidate.metadata))
    return units


@dataclass(frozen=True, slots=True)
class Quotes:
    """An extractive answer and the passages it quotes (indexes into the passages it was cut from), in the order
    of their source numbers: the answer numbers them 1, 2, … in that order."""

    text: str
    passages: tuple[int, ...]


def select_answer(units: Sequence[Unit], scores: Sequence[float], config: ExtractiveConfig) -> str:
    """The text of select_quotes, numbered by the passages' own positions."""
    return select_quotes(units, scores, config, renumber=False).text


def select_quotes(
    units: Sequence[Unit], scores: Sequence[float], config: ExtractiveConfig, *, renumber: bool = True
) -> Quotes:
    """The best units (with the unit before one that leans on it) quoted in document order within the budget.

    When no unit shares a term with the question (a match by meaning alone), the top passage's opening.
    `renumber`: the quoted passages are numbered 1, 2, … (so the sources shown are only those quoted); else each
    keeps its position among all passages.
    """
    if not units:
        return Quotes("", ())
    order = sorted(range(len(units)), key=lambda n: (-scores[n], units[n].passage, units[n].index))
    if scores[order[0]] <= 0:
        scores = [1.0 if unit.passage == units[0].passage else 0.0 for unit in units]
        order = [n for n in range(len(units)) if scores[n] > 0]
    bar = scores[order[0]] * config.keep_ratio
    taken: set[int] = set()
    for n in order:
        if scores[n] < bar or n in taken:
            continue
        if units[n].faq and units[order[0]].faq and units[n].passage != units[order[0]].passage:
            continue  # the best FAQ answers the question whole; another one answers another question
        options = [{n}]
        previous = n - 1
        leans = leans_on_previous(units[n]) and n > 0 and units[previous].passage == units[n].passage
        if leans and not units[previous].row:
            options.insert(0, {previous, n})
        for option in options:
            if len(render(units, taken | option)) <= config.max_chars:
                taken |= option
                break
    passages = tuple(sorted({units[n].passage for n in taken})) or (units[order[0]].passage,)
    numbers = {passage: number for number, passage in enumerate(passages, 1)} if renumber else None
    if taken:
        # Renumbering only shortens markers ([12] -> [2]), so the answer stays within the budget it was fitted to.
        return Quotes(render(units, taken, numbers), passages)
    # The best unit alone is over the budget: its head, cut on a word or character boundary.
    best = units[order[0]]
    marker = f" [{numbers[best.passage] if numbers else best.passage + 1}]"
    head = clip(" ".join(best.text.split()), config.max_chars - len("> ") - len(marker))
    return Quotes(_quote(head) + marker, passages)


def render(units: Sequence[Unit], chosen: set[int], numbers: Mapping[int, int] | None = None) -> str:
    """The chosen units per passage in document order: each heading once, in bold above the quote of the units
    under it; table rows as a table under their header row; each passage's last quote followed by its number
    (`numbers[passage]`, else its position among all passages)."""
    picked = sorted(chosen, key=lambda n: (units[n].passage, units[n].index))
    quoted: list[str] = []
    for position, n in enumerate(picked):
        unit = units[n]
        previous = units[picked[position - 1]] if position else None
        last_of_passage = position + 1 == len(picked) or units[picked[position + 1]].passage != unit.passage
        if previous is None or previous.passage != unit.passage or previous.heading != unit.heading:
            quoted.append(f"**{_inline(unit.heading)}**\n" if unit.heading else "")
            body = _opening(unit)
        else:
            body = _after(previous, unit)
        quoted[-1] += body
        if last_of_passage:
            tail = quoted[-1].rstrip()
            number = numbers[unit.passage] if numbers is not None else unit.passage + 1
            if unit.row:  # a line after a table's last row would be read as one more row
                marker = f"\n\n[{number}]"
            elif tail.endswith(("```", "~~~")):  # after a closing fence, or the fence would not close
                marker = f"\n[{number}]"
            else:
                marker = f" [{number}]"
            quoted[-1] += marker
    return "\n\n".join(_quote_section(section) for section in quoted)


def _opening(unit: Unit) -> str:
    """A unit opening a quote: a table row under its header and rule rows."""
    if unit.row and unit.header:
        return f"{unit.header}\n{_rule(unit.header)}\n{unit.text}"
    return unit.text


def _after(previous: Unit, unit: Unit) -> str:
    """What separates `unit` from the one quoted before it under the same heading, and the unit."""
    if unit.row and previous.row and unit.table == previous.table:
        return "\n" + unit.text
    if unit.row or previous.row:
        return "\n\n" + _opening(unit)
    if unit.index != previous.index + 1:
        return (f"\n{_GAP}\n" if unit.starts_line or previous.code else f" {_GAP} ") + unit.text
    if unit.starts_line or previous.code:
        return "\n" + unit.text
    return ("" if _HAN.match(previous.text[-1:]) or _HAN.match(unit.text[:1]) else " ") + unit.text


def _rule(header: str) -> str:
    return "|" + " --- |" * max(1, header.count(" | ") + 1)


def _inline(heading: str) -> str:
    """A heading as bold text's content: without emphasis marks of its own, which would end the bold early."""
    return heading.replace("**", "").replace("__", "").strip() or heading


def _quote_section(section: str) -> str:
    """A section quoted: its heading line (bold, first) stays outside the quote."""
    if section.startswith("**") and "**\n" in section:
        heading, _, body = section.partition("**\n")
        return f"{heading}**\n{_quote(body)}"
    return _quote(section)


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
