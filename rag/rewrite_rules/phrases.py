"""English noun phrases without a tagger: found by function words, capitals and word endings, with their role."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

Kind = Literal["person", "thing", "plural"]
"""What a pronoun can stand for: a person (he, she), a thing (it) or several (they)."""


def word_set(text: str) -> frozenset[str]:
    """The words of a space-separated list."""
    return frozenset(text.split())


_WORD = re.compile(r"[^\W_]+(?:['\u2019.&-][^\W_]+)*")

# Not a bare "this" or "that": they mostly stand for a statement or an action ("what if that doesn't work"
# after "how do I reset my password?"), which no noun phrase can replace (Webber's discourse deixis).
PRONOUNS: dict[str, Kind] = {
    "he": "person", "she": "person", "him": "person", "his": "person", "her": "person",
    "it": "thing", "its": "thing",
    "they": "plural", "them": "plural", "their": "plural", "these": "plural", "those": "plural",
}  # fmt: skip
DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those", "my", "your", "our"})
_OWNERS = frozenset({"his", "her", "its", "their"})
_COPULAS = word_set("is are was were be been 's")
_AUX = _COPULAS | word_set(
    "being am do does did done has have had can could will would should may might must shall "
    "isn't wasn't aren't weren't don't doesn't didn't"
)
_PREPOSITIONS = word_set(
    "of in on at to for from with by about as into onto over under after before during since until without "
    "within between among against through across behind beyond near toward towards upon via per than like"
)
# Very common verbs in their base form. After a singular noun a base form cannot be the verb of a present-tense
# clause ("the parental leave form"; the clause would be "the form leaves"), so there it continues the phrase.
_BASE_VERBS = word_set(
    "tell know think say get make go come take give see want like happen mean use become start begin find "
    "work differ compare play leave win lose help need live die describe explain define discuss list provide "
    "summarize summarise name"
)
# Closed-class words (and very common verbs) never start or continue a noun phrase.
_CLOSED = (
    _AUX
    | _PREPOSITIONS
    | DETERMINERS
    | frozenset(PRONOUNS)
    | word_set(
        "i me you we us mine yours ours hers theirs myself yourself himself herself itself themselves "
        "what who whom whose which where when why how whether there here "
        "and or but if so then because while although though nor yet also not no yes very more most less least much "
        "many few some any each every all both either neither other another such only just even still again ever "
        "never already too quite really else anything something nothing everything anyone someone everyone "
        "one ones first last next up down out off away back well "
        "said got made went gone came took gave saw happened happens means used became started began found "
        "works worked played left won lost lived died please thanks thank ok okay hi hello"
    )
    | _BASE_VERBS
)
# Relational heads, singular: "X of Y" is about Y ("the different types of sharks" -> "sharks"), and an X alone
# is no antecedent but leaves its Y unsaid: it names a property or a part of something else.
_RELATIONAL_HEADS = word_set(
    "type kind sort example history origin part member benefit advantage disadvantage cause effect symptom"
)
# Heads that count or hold: "a lot of fans", "the number of players", "a form of art" are about their Y too,
# but alone they are ordinary things ("the leave form", "the list").
_OF_HEADS = _RELATIONAL_HEADS | word_set("form number list lot")
_WH = word_set("what who whom whose which where when why how")
CONNECTORS = frozenset({"of", "the", "de", "del", "la", "le", "von", "van", "du", "da", "for", "on", "&"})
# Words that make a capitalised name an organisation, place, event or work rather than a person.
_NOT_PERSON = word_set(
    "records league university college school show war hall fame series history live band club team party church "
    "company award awards festival river city county state states street park album day life tour world cup "
    "championship association society museum institute prize game games film movie song records group"
)
_PARTICIPLES = word_set(
    "chosen known given taken made done seen written born built found held led sold told won begun grown shown "
    "spoken broken driven eaten fallen thrown worn kept set put run"
)
_INVERTING = _AUX - _COPULAS
# Subjects are the most salient, phrases after a preposition the least (as in centering theory's ranking).
_SUBJECT_WEIGHT, _OBLIQUE_WEIGHT = 1.5, 0.5
# Quantifiers and numerals lead a noun phrase but are not part of what a pronoun stands for ("5 unused days" -> them).
# Not "any", "other", "each", "every": what they quantify is no particular set ("are there any other albums?").
_QUANTIFIERS = word_set("some many few several all both most")
# Articles a replacement keeps: "a 529 plan", "the Eiffel Tower" (a bare "meeting room" is not English).
ARTICLES = frozenset({"the", "a", "an"})
# Possessives a replacement keeps too: "my password" (a bare "password" is not English either).
_PERSONAL = frozenset({"my", "our", "your"})
# The few English nouns ending in -est; any other word so ending is a superlative ("the easiest"), never a head.
_SUBJECT_PRONOUNS = word_set("i we you he she it they")
_MAX_NAME_WORDS = 6  # "Big Brother and the Holding Company"; a longer capitalised run is a title or a heading
_RANKS = word_set("best worst first last")
_EST_NOUNS = word_set(
    "interest interests forest forests request requests test tests contest contests protest protests guest guests "
    "quest quests chest chests nest nests west rest harvest harvests conquest conquests arrest arrests pest pests "
    "vest vests crest digest inquest behest bequest priest priests manifest"
)


@dataclass(frozen=True, slots=True)
class Token:
    """One word of a sentence with its place in it."""

    text: str
    start: int
    end: int
    joined: bool  # nothing but spaces between this token and the one before

    @property
    def low(self) -> str:
        return self.text.lower().removesuffix("'s").removesuffix("\u2019s")


@dataclass(frozen=True, slots=True)
class Phrase:
    """A noun phrase of a sentence: a name ("Billie Jean King") or a common phrase ("the protection pledge")."""

    text: str
    name: bool  # a capitalised name rather than a common noun phrase
    owned: bool  # owned by a pronoun ("its symptoms"): part of a chain, not a new antecedent
    role: float = 1.0  # salience of its place in the sentence: subject > object > after a preposition
    start: int = 0  # where `text` starts in its sentence
    user: bool = False  # said by the user (an answer's words are weaker evidence)

    @property
    def words(self) -> list[str]:
        folded = unicodedata.normalize("NFKD", self.text)  # "González" is also written "Gonzalez"
        return [word.lower() for word in _WORD.findall("".join(c for c in folded if not unicodedata.combining(c)))]

    @property
    def key(self) -> str:
        head = self.words[-1]
        return singular(head) if len(head) > 3 else head

    @property
    def plural(self) -> bool:
        if self.name and self.words[0] != "the" and len(self.words) > 1:
            return False  # "Tennessee Williams", "Los Angeles": a name of several words without "the" is one thing
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
            and not (len(words) == 1 and self.text.isupper())  # "INXS", "NASA": an acronym names no person
        )


def tokenize(text: str) -> list[Token]:
    """The words of `text` ("Ol' Dirty", "U.S.", "Blink-182" stay whole), each knowing if only spaces precede it."""
    found: list[Token] = []
    for match in _WORD.finditer(text):
        joined = bool(found) and not text[found[-1].end : match.start()].strip()
        found.append(Token(match.group(), match.start(), match.end(), joined))
    return found


def capitalised(token: Token) -> bool:
    """Whether a word can be part of a name: capitalised and no function word, or an acronym."""
    if len(token.text) > 1 and token.text.isupper():
        return True  # an acronym: "US", "BBC", "INXS"
    return token.text[0].isupper() and token.low not in _CLOSED


def content(token: Token) -> bool:
    """Whether a lowercase word can be part of a common noun phrase (no function word, number or -ly adverb)."""
    low = token.low
    return low not in _CLOSED and not low.isdigit() and not low.endswith("ly") and token.text.islower()


def _name_end(tokens: list[Token], index: int) -> int:
    end = index + 1
    while end < len(tokens) and tokens[end].joined and end - index < _MAX_NAME_WORDS:
        if capitalised(tokens[end]):
            end += 1
        elif tokens[end].low in CONNECTORS and end + 1 < len(tokens) and capitalised(tokens[end + 1]):
            end += 2
        else:
            break
    return end


def _participle(low: str) -> bool:
    return low.endswith("ed") or low in _PARTICIPLES


def _noun_modifier(tokens: list[Token], index: int) -> bool:
    """Whether a base-form verb inside a run modifies the noun after it ("leave form") rather than being the verb."""
    after = tokens[index + 1] if index + 1 < len(tokens) else None
    return (
        tokens[index].low in _BASE_VERBS
        and not tokens[index - 1].low.endswith("s")
        and after is not None
        and after.joined
        and content(after)
    )


def superlative(low: str) -> bool:
    """Whether a word ranks ("biggest", "best", "first"): after "the" it can stand without its noun."""
    return low in _RANKS or (low.endswith("est") and len(low) > 4 and low not in _EST_NOUNS)


def _adjective(low: str) -> bool:
    """Whether a word is an adjective by its ending (-able, -ible, -ous, -ful, -less, a superlative's -est)."""
    return superlative(low) or (len(low) > 5 and low.endswith(("able", "ible", "ous", "ful", "less")))


def _common_end(tokens: list[Token], index: int, inverted: bool) -> int:
    end = index
    while end < len(tokens) and end - index < 4 and (end == index or tokens[end].joined):
        if not content(tokens[end]) and not (end > index and _noun_modifier(tokens, end)):
            break
        if end > index and _participle(tokens[end].low):
            break  # "the system chosen", "the results obtained": a verb or participle follows the noun
        end += 1
        if tokens[end - 1].text.endswith(("'s", "\u2019s")):
            break  # a possessor ends its own phrase: "throat cancer's symptoms"
    if inverted and end - index > 1 and (end == len(tokens) or not tokens[end].joined):
        end -= 1  # "how did these languages evolve?": after an inverted do/can/will the run ends with the verb
    while end > index and _adjective(tokens[end - 1].low):
        end -= 1  # a noun phrase ends with its noun: "the easiest", "closest" name nothing
    if index < end < len(tokens) and tokens[end].joined and tokens[end].low.isdigit():
        end += 1  # "room 12", "project number 3": the number tells this one from the others
    return end


def _nouns_after_name(tokens: list[Token], index: int) -> int:
    """How many nouns after a name starting at tokens[index] it modifies ("the Stanford prison experiment": 2):
    content words, up to 3, followed by nothing that could be their object; 0 when they may be a verb and object."""
    end = index
    while end < len(tokens) and end - index < 3 and tokens[end].joined and content(tokens[end]):
        if _participle(tokens[end].low) or _adjective(tokens[end].low):
            return 0  # "the system chosen", "is the VPN available"
        end += 1
        if tokens[end - 1].text.endswith(("'s", "\u2019s")):
            return end - index  # a possessor ends its phrase: "the Surrealism movement's founding"
    after = tokens[end] if end < len(tokens) else None
    return end - index if after is None or not after.joined or after.low in _CLOSED else 0


def _interjection(tokens: list[Token]) -> bool:
    """Whether the sentence opens with a word that names nothing: one set off by a comma ("Sorry, ...", "Well,
    ..."), an -ly adverb ("Unfortunately ...") or one before a subject pronoun ("Sorry I could not ...")."""
    if len(tokens) < 2 or not tokens[0].text[0].isupper() or tokens[0].low in _CLOSED or tokens[0].text.isupper():
        return False
    return not tokens[1].joined or tokens[0].low.endswith("ly") or tokens[1].low in _SUBJECT_PRONOUNS


def _leads_common_phrase(tokens: list[Token], index: int, owner: str) -> bool:
    """Whether a common noun phrase can start at tokens[index], given the word before it."""
    if owner == "to":  # "easiest to learn": an infinitive, unless a noun follows ("to cloud computing")
        after = tokens[index + 1] if index + 1 < len(tokens) else None
        return after is not None and after.joined and content(after)
    if index == 0 or owner in DETERMINERS | _PREPOSITIONS | _OWNERS | _QUANTIFIERS or owner.isdigit():
        return True
    return owner in _AUX and not _participle(tokens[index].low)  # "can be carried over" is a verb, not a noun


def singular(low: str) -> str:
    """The singular of a regular English plural ("sharks" -> "shark"); anything else unchanged."""
    # "-ss", "-is", "-us" end singular nouns ("class", "ketosis", "virus"), not plurals
    return low[:-1] if low.endswith("s") and not low.endswith(("ss", "is", "us")) else low


def relational(low: str) -> bool:
    """Whether a noun names a property or part of something else ("advantages", "types", "members")."""
    return singular(low) in _RELATIONAL_HEADS


def _inverted(tokens: list[Token], at: int) -> bool:
    """Whether tokens[at] is an auxiliary before its subject: "did X show", "was X ethical", "why is X important"
    (the word after X is then a verb or a predicate); "what is X" and "who was X" are not, as what/who is the
    predicate there."""
    if at < 0 or tokens[at].low not in _AUX:
        return False
    return tokens[at].low in _INVERTING or at == 0 or tokens[at - 1].low in _WH - word_set("what who which whose")


def _lead_index(tokens: list[Token], index: int) -> int:
    """Where the word before a phrase's determiners and numbers is ("did" in "did all these languages"); -1: none."""
    back = index - 1
    while back >= 0 and tokens[back + 1].joined:
        low = tokens[back].low
        if low not in DETERMINERS | _QUANTIFIERS and not low.isdigit():
            return back
        back -= 1
    return -1 if back < 0 or not tokens[back + 1].joined else back


def phrases(sentence: str) -> list[Phrase]:
    """Noun phrases of one sentence, in order: capitalised names and determiner/preposition/verb-led common phrases."""
    tokens, found, index = tokenize(sentence), [], 0
    about_next = False
    while index < len(tokens):
        token = tokens[index]
        owner = tokens[index - 1].low if index and token.joined else ""
        at = _lead_index(tokens, index)
        lead = tokens[at].low if at >= 0 else ""
        if at >= 0 and lead in _COPULAS and at > 0 and tokens[at - 1].low not in _WH:
            role = _OBLIQUE_WEIGHT  # "want it to be the national symbol": a predicate describes, it is no referent
        elif index == 0 or lead in _AUX:
            role = _SUBJECT_WEIGHT  # "Gonzalez grew up", "when did Weeb retire"
        elif lead in _PREPOSITIONS and lead != "about" and not about_next:
            role = _OBLIQUE_WEIGHT  # "in a rough area of Puerto Rico"
        else:
            role = 1.0
        owned, about_next = owner in _OWNERS, False
        if index == 0 and _interjection(tokens):
            index += 1  # "Sorry, ...", "Unfortunately, ...": a word set off at the start names nothing
            continue
        if capitalised(token):
            end = _name_end(tokens, index)
            start = tokens[index - 1].start if owner == "the" else token.start
            plural = tokens[end - 1].low.endswith("s")  # "the Brits call it": a plural name is followed by its verb
            if owner == "the" and not plural and not _inverted(tokens, at):
                end += _nouns_after_name(tokens, end)  # "the BBC experiment": a name modifying a noun
            text = sentence[start : tokens[end - 1].end]
            found.append(Phrase(text.removesuffix("'s").removesuffix("\u2019s"), True, owned, role, start))
            index = end
            continue
        if content(token) and _leads_common_phrase(tokens, index, owner):
            end = _common_end(tokens, index, lead in _INVERTING)
            if end > index:
                if singular(tokens[end - 1].low) in _OF_HEADS and end < len(tokens) and tokens[end].low == "of":
                    index, about_next = end + 1, True  # the phrase after "of" is the one that matters
                    continue
                start = tokens[index - 1].start if owner in ARTICLES | _PERSONAL else token.start
                if owner.isdigit() and index > 1 and tokens[index - 1].joined and tokens[index - 2].low in ARTICLES:
                    start = tokens[index - 2].start  # "a 529 plan", "the 2014 season": a number naming a kind
                text = sentence[start : tokens[end - 1].end]
                found.append(Phrase(text.removesuffix("'s").removesuffix("\u2019s"), False, owned, role, start))
                index = end
                continue
        index += 1
    return [phrase for phrase in found if len(phrase.text) > 1 and phrase.words]
