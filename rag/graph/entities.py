"""Rule-based entity extraction, no model: English capitalised phrases and names with digits, jieba's noun tags.

The seed extracts a question's entities with its chat model; this is what lets the entity leg work offline, and it is
what chunks are read with at ingestion (a model call per chunk would cost more than the embedding).
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

import jieba
import jieba.posseg

# A chunk names a few dozen things at most; past this the rest are its running text's nouns, not its subjects.
MOST_PER_TEXT: Final = 64


@dataclass(frozen=True, slots=True)
class Entity:
    """A named thing: its name as written, a coarse label, and what a model said about it."""

    name: str
    label: str = "entity"
    attributes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def key(self) -> str:
        """The name as the graph stores and matches it."""
        return entity_key(self.name)


@dataclass(frozen=True, slots=True)
class Relation:
    """A relation a model saw between two named things."""

    source: str
    target: str
    relation: str


@dataclass(frozen=True, slots=True)
class Extraction:
    """The entities of a text, and the relations between them when a model read it."""

    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...] = ()


def entity_key(name: str) -> str:
    """A name folded for matching: NFKC (full-width letters), case folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def extract_entities(text: str) -> tuple[Entity, ...]:
    """The entities of `text` by rule, first mention first, one per key, at most MOST_PER_TEXT."""
    found: dict[str, Entity] = {}
    for entity in _english(text):
        found.setdefault(entity.key, entity)
    if _HAN.search(text):
        for entity in _chinese(text):
            found.setdefault(entity.key, entity)
    return tuple(found.values())[:MOST_PER_TEXT]


# --- English ----------------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"[.!?。！？;；:：\n]+")
# Words (letters, digits, inner hyphens, dots and apostrophes) and numbers; "iPhone", "X200", "COVID-19", "U.S.".
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9]*(?:[-'.&][A-Za-z0-9]+)*")
_NUMBER = re.compile(r"\d+(?:\.\d+)*")
# Small words that may stand inside a name ("Bank of America", "Statue of Liberty") but never start or end one.
_JOINERS: Final = frozenset({"of", "de", "la", "von", "van", "der", "du", "y"})
# Capitalised at a sentence's start only because they start it: never an entity alone there.
_STARTERS: Final = frozenset(
    (  # noqa: SIM905 (a word list reads better as prose)
        "a an the this that these those there here it its is are was were be been being am do does did done have has "
        "had can could should would shall will may might must what which who whom whose when where why how if "
        "then than so but and or nor not no yes i you he she we they me him her us them my your his our their "
        "in on at by for from to with without about after before over under into onto of as all any each every "
        "some many much most more few both either neither other another such only also just please tell show "
        "give list find let let's is there however although though because since while until unless whether "
        "one two three four five six seven eight nine ten first second new"
    ).split()
)


def _english(text: str) -> Iterator[Entity]:
    for sentence in _SENTENCE_END.split(text):
        words = [match.group() for match in _WORD.finditer(sentence)]
        yield from _phrases(words)


def _phrases(words: list[str]) -> Iterator[Entity]:
    run: list[str] = []
    for index, word in enumerate(words):
        if _name_like(word) and not (index == 0 and word.casefold() in _STARTERS):
            run.append(word)
        elif run and (_NUMBER.fullmatch(word) or word.casefold() in _JOINERS):
            # "iPhone 15", "RFC 7231": a number right after a name is part of it; a joiner waits for the next word.
            run.append(word)
        else:
            yield from _finish(run)
            run = []
    yield from _finish(run)


def _finish(run: list[str]) -> Iterator[Entity]:
    while run and run[-1].casefold() in _JOINERS:
        run = run[:-1]
    if not run:
        return
    name = _strip_possessive(" ".join(run))
    if len(name) >= 2 and not name.isdigit():
        yield Entity(name, "name")
    if len(run) > 1:
        # "the Acme X200" is also about the X200 and "NASA Ames" about NASA: a part that is a name alone counts too.
        for word in run:
            if _distinctive(word):
                yield Entity(_strip_possessive(word), "name")


def _name_like(word: str) -> bool:
    """Capitalised ("Paris"), camel-cased ("iPhone"), an acronym ("NASA"), or letters with digits ("X200")."""
    if word.casefold() in _JOINERS or _NUMBER.fullmatch(word):
        return False
    has_digit = any(char.isdigit() for char in word)
    has_alpha = any(char.isalpha() for char in word)
    if has_digit and has_alpha:
        return True
    return word[0].isupper() or any(char.isupper() for char in word[1:])


def _distinctive(word: str) -> bool:
    """Letters with digits ("X200"), an acronym ("NASA") or camel case ("iPhone"): a name even without its phrase."""
    letters = [char for char in word if char.isalpha()]
    if any(char.isdigit() for char in word) and letters:
        return True
    return len(letters) >= 2 and (word.isupper() or (word[0].islower() and any(char.isupper() for char in word)))


def _strip_possessive(name: str) -> str:
    return name[:-2] if name.endswith(("'s", "'S")) else name


# --- Chinese ----------------------------------------------------------------------------------------------------

_HAN = re.compile(r"[\u4e00-\u9fff]")
# jieba's tags (ICTCLAS): person, place, organisation, other proper noun; and plain nouns of two characters or more.
_PROPER: Final = {"nr": "person", "ns": "place", "nt": "organization", "nz": "name"}
_NOUN: Final = "n"
_tokenizer: jieba.posseg.POSTokenizer | None = None
_tokenizer_lock = threading.Lock()


def _chinese(text: str) -> Iterator[Entity]:
    for pair in _pos_tokenizer().cut(text):
        word, tag = pair.word.strip(), pair.flag
        if not _HAN.search(word):
            continue
        if tag in _PROPER:
            yield Entity(word, _PROPER[tag])
        elif tag == _NOUN and len(word) >= 2:
            yield Entity(word, "noun")


def _pos_tokenizer() -> jieba.posseg.POSTokenizer:
    # jieba builds its prefix dictionary lazily (~1 s); once per process, thread-safely.
    global _tokenizer
    with _tokenizer_lock:
        if _tokenizer is None:
            tokenizer = jieba.posseg.POSTokenizer(jieba.Tokenizer())
            tokenizer.tokenizer.initialize()
            _tokenizer = tokenizer
        return _tokenizer
