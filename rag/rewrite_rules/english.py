"""English pronoun resolution without a tagger: noun phrases found by function words and capitals, by salience."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rag.rewrite import Round

Kind = Literal["person", "thing", "plural"]
"""What a pronoun can stand for: a person (he, she), a thing (it) or several (they)."""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WORD = re.compile(r"[^\W_]+(?:['\u2019.&-][^\W_]+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

_PRONOUNS: dict[str, Kind] = {
    "he": "person", "she": "person", "him": "person", "his": "person", "her": "person",
    "it": "thing", "its": "thing", "this": "thing", "that": "thing",
    "they": "plural", "them": "plural", "their": "plural", "these": "plural", "those": "plural",
}  # fmt: skip
_POSSESSIVE = frozenset({"his", "its", "their"})
_DEMONSTRATIVE = frozenset({"this", "that", "these", "those"})
_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those", "my", "your", "our"})
_OWNERS = frozenset({"his", "her", "its", "their"})
_COPULAS = _words("is are was were be been 's")
_AUX = _COPULAS | _words(
    "being am do does did done has have had can could will would should may might must shall "
    "isn't wasn't aren't weren't don't doesn't didn't"
)
_PREPOSITIONS = _words(
    "of in on at to for from with by about as into onto over under after before during since until without "
    "within between among against through across behind beyond near toward towards upon via per than like"
)
# Closed-class words (and very common verbs) never start or continue a noun phrase.
_CLOSED = (
    _AUX
    | _PREPOSITIONS
    | _DETERMINERS
    | frozenset(_PRONOUNS)
    | _words(
        "i me you we us mine yours ours hers theirs myself yourself himself herself itself themselves "
        "what who whom whose which where when why how whether there here "
        "and or but if so then because while although though nor yet also not no yes very more most less least much "
        "many few some any each every all both either neither other another such only just even still again ever "
        "never already too quite really else anything something nothing everything anyone someone everyone "
        "one ones first last next up down out off away back well "
        "tell know think say said get got make made go went gone come came take took give gave see saw want like "
        "happen happened happens mean means use used become became start started begin began find found "
        "work works worked differ compare play played leave left win won lose lost help need live lived die died "
        "describe explain compare define discuss list provide summarize summarise name "
        "please thanks thank ok okay hi hello"
    )
)
# Heads whose "X of Y" phrase is about Y ("the different types of sharks" -> "sharks").
_RELATIONAL_HEADS = _words(
    "type types kind kinds sort sorts form forms number list examples example history origin origins "
    "lot lots part parts member members benefits advantages disadvantages causes effects symptoms"
)
_CONNECTORS = frozenset({"of", "the", "de", "del", "la", "le", "von", "van", "du", "da", "for", "on", "&"})
# Words that make a capitalised name an organisation, place, event or work rather than a person.
_NOT_PERSON = _words(
    "records league university college school show war hall fame series history live band club team party church "
    "company award awards festival river city county state states street park album day life tour world cup "
    "championship association society museum institute prize game games film movie song records group"
)
# After these, "that"/"this" refers to an event or is a conjunction, not to a noun phrase ("after that", "so that").
_NOT_AFTER = _words(
    "after before besides since like than so such now about despite beyond say said think know believe true "
    "mean means hope suggest show shows showed"
)
_PARTICIPLES = _words(
    "chosen known given taken made done seen written born built found held led sold told won begun grown shown "
    "spoken broken driven eaten fallen thrown worn kept set put run"
)
_INVERTING = _AUX - _COPULAS
_EXPLETIVE_NEXT = _words("true possible likely known said reported believed important necessary hard easy")
# Salience: a user's own words weigh twice an answer's, and each round back counts this much less.
# Subjects are the most salient, phrases after a preposition the least (as in centering theory's ranking).
_USER_WEIGHT, _ANSWER_WEIGHT, _DECAY = 2.0, 1.0, 0.8
_SUBJECT_WEIGHT, _OBLIQUE_WEIGHT = 1.5, 0.5


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    start: int
    end: int
    joined: bool  # nothing but spaces between this token and the one before

    @property
    def low(self) -> str:
        return self.text.lower().removesuffix("'s").removesuffix("\u2019s")


@dataclass(frozen=True, slots=True)
class _Phrase:
    text: str
    name: bool  # a capitalised name rather than a common noun phrase
    owned: bool  # owned by a pronoun ("its symptoms"): part of a chain, not a new antecedent
    role: float = 1.0  # salience of its place in the sentence: subject > object > after a preposition

    @property
    def words(self) -> list[str]:
        folded = unicodedata.normalize("NFKD", self.text)  # "González" is also written "Gonzalez"
        return [word.lower() for word in _WORD.findall("".join(c for c in folded if not unicodedata.combining(c)))]

    @property
    def key(self) -> str:
        head = self.words[-1]
        return head[:-1] if head.endswith("s") and not head.endswith("ss") and len(head) > 3 else head

    @property
    def plural(self) -> bool:
        return self.key != self.words[-1]  # "sharks", "Cubesats", "the Smashing Pumpkins"

    @property
    def person(self) -> bool:
        words = self.words  # people's names take no article: "the Eiffel Tower" is a thing
        return (
            self.name
            and len(words) <= 3
            and not _NOT_PERSON.intersection(words)
            and words[0] != "the"
            and not self.plural
        )


def _tokens(text: str) -> list[_Token]:
    found: list[_Token] = []
    for match in _WORD.finditer(text):
        joined = bool(found) and not text[found[-1].end : match.start()].strip()
        found.append(_Token(match.group(), match.start(), match.end(), joined))
    return found


def _capitalised(token: _Token) -> bool:
    if len(token.text) > 1 and token.text.isupper():
        return True  # an acronym: "US", "BBC", "INXS"
    return token.text[0].isupper() and token.low not in _CLOSED


def _content(token: _Token) -> bool:
    low = token.low
    return low not in _CLOSED and not low.isdigit() and not low.endswith("ly") and token.text.islower()


def _name_end(tokens: list[_Token], index: int) -> int:
    end = index + 1
    while end < len(tokens) and tokens[end].joined:
        if _capitalised(tokens[end]):
            end += 1
        elif tokens[end].low in _CONNECTORS and end + 1 < len(tokens) and _capitalised(tokens[end + 1]):
            end += 2
        else:
            break
    return end


def _common_end(tokens: list[_Token], index: int, inverted: bool) -> int:
    end = index
    while end < len(tokens) and end - index < 4 and _content(tokens[end]) and (end == index or tokens[end].joined):
        if end > index and (tokens[end].low.endswith("ed") or tokens[end].low in _PARTICIPLES):
            break  # "the system chosen", "the results obtained": a verb or participle follows the noun
        end += 1
    if inverted and end - index > 1 and (end == len(tokens) or not tokens[end].joined):
        end -= 1  # "how did these languages evolve?": after an inverted do/can/will the run ends with the verb
    return end


def _head_noun_at(tokens: list[_Token], index: int) -> bool:
    """Whether tokens[index] ends a phrase as its noun: a content word followed by nothing that could be its object."""
    if index >= len(tokens) or not tokens[index].joined or not _content(tokens[index]):
        return False
    low = tokens[index].low
    if low.endswith("ed") or low in _PARTICIPLES:
        return False
    after = tokens[index + 1] if index + 1 < len(tokens) else None
    return after is None or not after.joined or after.low in _CLOSED


def _phrases(sentence: str) -> list[_Phrase]:
    """Noun phrases of one sentence, in order: capitalised names and determiner/preposition/verb-led common phrases."""
    tokens, found, index = _tokens(sentence), [], 0
    inverted = about_next = False
    while index < len(tokens):
        token = tokens[index]
        owner = tokens[index - 1].low if index and token.joined else ""
        inverted = inverted or owner in _INVERTING
        lead = tokens[index - 2].low if owner in _DETERMINERS and index > 1 and tokens[index - 1].joined else owner
        if index == 0 or lead in _AUX:
            role = _SUBJECT_WEIGHT  # "Gonzalez grew up", "when did Weeb retire"
        elif lead in _PREPOSITIONS and lead != "about" and not about_next:
            role = _OBLIQUE_WEIGHT  # "in a rough area of Puerto Rico"
        else:
            role = 1.0
        owned, about_next = owner in _OWNERS, False
        if _capitalised(token):
            end = _name_end(tokens, index)
            start = tokens[index - 1].start if owner == "the" else token.start
            if owner == "the" and _head_noun_at(tokens, end):
                end += 1  # "the Neverending Story film", "the BBC experiment": a name modifying a noun
            text = sentence[start : tokens[end - 1].end]
            found.append(_Phrase(text.removesuffix("'s").removesuffix("\u2019s"), True, owned, role))
            index = end
            continue
        if _content(token) and (index == 0 or owner in _DETERMINERS | _PREPOSITIONS | _AUX | _OWNERS):
            end = _common_end(tokens, index, inverted)
            if end > index:
                if tokens[end - 1].low in _RELATIONAL_HEADS and end < len(tokens) and tokens[end].low == "of":
                    index, about_next = end + 1, True  # the phrase after "of" is the one that matters
                    continue
                start = tokens[index - 1].start if owner == "the" else token.start
                text = sentence[start : tokens[end - 1].end]
                found.append(_Phrase(text.removesuffix("'s").removesuffix("\u2019s"), False, owned, role))
                index = end
                continue
        index += 1
    return [phrase for phrase in found if len(phrase.text) > 1 and phrase.words]


def _english_references(query: str) -> list[tuple[_Token, Kind, bool]]:
    """(token, kind, possessive) for each pronoun in `query` that refers back to something, first one per kind."""
    tokens, found, kinds = _tokens(query), [], set()
    for index, token in enumerate(tokens):
        kind = _PRONOUNS.get(token.text.lower())
        if kind is None or kind in kinds:
            continue
        low = token.text.lower()
        before = tokens[index - 1].low if index else ""
        after = tokens[index + 1] if index + 1 < len(tokens) else None
        followed_by_noun = after is not None and after.joined and (_content(after) or _capitalised(after))
        if low in _DEMONSTRATIVE and (followed_by_noun or before in _NOT_AFTER):
            continue  # a determiner ("this album"), a conjunction ("so that") or an event ("after that")
        if low == "that" and index and (_content(tokens[index - 1]) or _capitalised(tokens[index - 1])):
            continue  # a relative pronoun ("the album that ...")
        if low == "it" and after is not None and after.low in _EXPLETIVE_NEXT:
            continue  # "is it true that ..."
        kinds.add(kind)
        found.append((token, kind, low in _POSSESSIVE or (low == "her" and followed_by_noun)))
    return found


def _fits(phrase: _Phrase, kind: Kind) -> bool:
    if phrase.owned:
        return False
    if kind == "person":
        return phrase.person
    if kind == "plural":
        return phrase.plural or (phrase.name and not phrase.person)
    return not phrase.plural and not (phrase.person and len(phrase.words) > 1)


def _same(one: _Phrase, other: _Phrase) -> bool:
    if one.name and other.name:
        return bool(set(one.words) & set(other.words) - _CONNECTORS)
    return not one.name and not other.name and one.key == other.key


def _topic(history: Sequence[Round], kind: Kind) -> str | None:
    """The phrase a `kind` pronoun most likely means: mentioned most, recently and by the user (a salience score)."""
    mentions: list[tuple[_Phrase, float]] = []
    for back, (user, assistant) in enumerate(reversed(history)):
        decay = _DECAY**back
        first_sentence = _SENTENCE_END.split(assistant.strip(), maxsplit=1)[0]
        for text, weight in ((user, _USER_WEIGHT), (first_sentence, _ANSWER_WEIGHT)):
            mentions.extend((phrase, weight * decay * phrase.role) for phrase in _phrases(text))
    best: tuple[float, _Phrase] | None = None
    for phrase, _ in mentions:
        if not _fits(phrase, kind):
            continue
        score = sum(weight for other, weight in mentions if _same(phrase, other))
        if best is None or score > best[0] + 1e-9:
            best = (score, phrase)
    if best is None:
        return None
    # Name it as fully as any mention did ("Weeb" -> "Weeb Ewbank"), without pronoun-owned mentions.
    forms = [other for other, _ in mentions if _same(best[1], other) and not other.owned]
    return max(forms, key=lambda other: (len(other.words), other.name)).text if forms else best[1].text


def rewrite_english(query: str, history: Sequence[Round]) -> tuple[str, str] | None:
    """`query` with its pronouns replaced by what they most likely mean, and what was done; None when nothing was."""
    replacements = []
    for token, kind, possessive in _english_references(query):
        phrase = _topic(history, kind)
        if phrase is None or phrase.lower() in query.lower():
            continue
        if token.start == 0:
            phrase = phrase[0].upper() + phrase[1:]
        elif phrase.startswith("The "):
            phrase = "the" + phrase[3:]  # "The Eiffel Tower is ..." started a sentence; here it is mid-sentence
        replacements.append((token, phrase + ("'" if phrase.endswith("s") else "'s") if possessive else phrase))
    if not replacements:
        return None
    text = query
    for token, phrase in sorted(replacements, key=lambda item: -item[0].start):
        text = text[: token.start] + phrase + text[token.end :]
    said = ", ".join(f"{token.text}->{phrase}" for token, phrase in replacements)
    return text, f"resolved {said}"
