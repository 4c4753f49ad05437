"""English pronoun resolution without a tagger: noun phrases found by function words and capitals, by salience."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from rag.rewrite import Round

Kind = Literal["person", "thing", "plural"]
"""What a pronoun can stand for: a person (he, she), a thing (it) or several (they)."""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WORD = re.compile(r"[^\W_]+(?:['\u2019.&-][^\W_]+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_NEXT_WORD = re.compile(r" +([^\W_]+)")
# A second question joined by "and": "What is X and why is it important?"
_NEXT_CLAUSE = re.compile(r"\band (?:what|why|how|when|where|who|which|is|are|was|were|do|does|did|can)\b", re.I)

# Not a bare "this" or "that": they mostly stand for a statement or an action ("what if that doesn't work"
# after "how do I reset my password?"), which no noun phrase can replace (Webber's discourse deixis).
_PRONOUNS: dict[str, Kind] = {
    "he": "person", "she": "person", "him": "person", "his": "person", "her": "person",
    "it": "thing", "its": "thing",
    "they": "plural", "them": "plural", "their": "plural", "these": "plural", "those": "plural",
}  # fmt: skip
_POSSESSIVE = frozenset({"his", "its", "their"})
_DEMONSTRATIVE = frozenset({"these", "those"})
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
# Very common verbs in their base form. After a singular noun a base form cannot be the verb of a present-tense
# clause ("the parental leave form"; the clause would be "the form leaves"), so there it continues the phrase.
_BASE_VERBS = _words(
    "tell know think say get make go come take give see want like happen mean use become start begin find "
    "work differ compare play leave win lose help need live die describe explain define discuss list provide "
    "summarize summarise name"
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
        "said got made went gone came took gave saw happened happens means used became started began found "
        "works worked played left won lost lived died please thanks thank ok okay hi hello"
    )
    | _BASE_VERBS
)
# Relational heads, singular: "X of Y" is about Y ("the different types of sharks" -> "sharks"), and an X alone
# is no antecedent but leaves its Y unsaid: it names a property or a part of something else.
_RELATIONAL_HEADS = _words(
    "type kind sort example history origin part member benefit advantage disadvantage cause effect symptom"
)
# Heads that count or hold: "a lot of fans", "the number of players", "a form of art" are about their Y too,
# but alone they are ordinary things ("the leave form", "the list").
_OF_HEADS = _RELATIONAL_HEADS | _words("form number list lot")
_WH = _words("what who whom whose which where when why how")
_CONNECTORS = frozenset({"of", "the", "de", "del", "la", "le", "von", "van", "du", "da", "for", "on", "&"})
# Words that make a capitalised name an organisation, place, event or work rather than a person.
_NOT_PERSON = _words(
    "records league university college school show war hall fame series history live band club team party church "
    "company award awards festival river city county state states street park album day life tour world cup "
    "championship association society museum institute prize game games film movie song records group"
)
# After these, "these"/"those" refer to events or statements, not to a noun phrase ("after those", "like those").
_NOT_AFTER = _words(
    "after before besides since like than so such now about despite beyond say said think know believe true "
    "mean means hope suggest show shows showed"
)
_PARTICIPLES = _words(
    "chosen known given taken made done seen written born built found held led sold told won begun grown shown "
    "spoken broken driven eaten fallen thrown worn kept set put run"
)
_INVERTING = _AUX - _COPULAS
# Quantifiers and numerals lead a noun phrase but are not part of what a pronoun stands for ("5 unused days" -> them).
# Not "any", "other", "each", "every": what they quantify is no particular set ("are there any other albums?").
_QUANTIFIERS = _words("some many few several all both most")
# Articles a replacement keeps: "a 529 plan", "the Eiffel Tower" (a bare "meeting room" is not English).
_ARTICLES = frozenset({"the", "a", "an"})
_DEFINITE = frozenset({"the", "this", "that", "these", "those"})
# The few English nouns ending in -est; any other word so ending is a superlative ("the easiest"), never a head.
_EST_NOUNS = _words(
    "interest interests forest forests request requests test tests contest contests protest protests guest guests "
    "quest quests chest chests nest nests west rest harvest harvests conquest conquests arrest arrests pest pests "
    "vest vests crest digest inquest behest bequest priest priests manifest"
)
_CLAUSE_OPENERS = _words("that to whether if for")
_EXPLETIVE_NEXT = _words("true possible likely known said reported believed important necessary hard easy")
# Salience: a user's own words weigh four times an answer's (an answer is a weak source: it may be a fixed text),
# and each round back counts half as much, so the latest round dominates; 8 rounds back weigh under 1%.
# Subjects are the most salient, phrases after a preposition the least (as in centering theory's ranking).
_USER_WEIGHT, _ANSWER_WEIGHT, _DECAY = 2.0, 0.5, 0.5
_MAX_ROUNDS = 8
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
        return head[:-1] if head.endswith("s") and not head.endswith("ss") and len(head) > 3 else head

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


def _participle(low: str) -> bool:
    return low.endswith("ed") or low in _PARTICIPLES


def _noun_modifier(tokens: list[_Token], index: int) -> bool:
    """Whether a base-form verb inside a run modifies the noun after it ("leave form") rather than being the verb."""
    after = tokens[index + 1] if index + 1 < len(tokens) else None
    return (
        tokens[index].low in _BASE_VERBS
        and not tokens[index - 1].low.endswith("s")
        and after is not None
        and after.joined
        and _content(after)
    )


def _adjective(low: str) -> bool:
    """Whether a word is an adjective by its ending (-able, -ible, -ous, -ful, -less, a superlative's -est)."""
    if low.endswith("est") and len(low) > 4 and low not in _EST_NOUNS:
        return True
    return len(low) > 5 and low.endswith(("able", "ible", "ous", "ful", "less"))


def _common_end(tokens: list[_Token], index: int, inverted: bool) -> int:
    end = index
    while end < len(tokens) and end - index < 4 and (end == index or tokens[end].joined):
        if not _content(tokens[end]) and not (end > index and _noun_modifier(tokens, end)):
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
    return end


def _head_noun_at(tokens: list[_Token], index: int) -> bool:
    """Whether tokens[index] ends a phrase as its noun: a content word followed by nothing that could be its object."""
    if index >= len(tokens) or not tokens[index].joined or not _content(tokens[index]):
        return False
    low = tokens[index].low
    if _participle(low) or _adjective(low):
        return False  # "the system chosen", "is the VPN available"
    after = tokens[index + 1] if index + 1 < len(tokens) else None
    return after is None or not after.joined or after.low in _CLOSED


def _interjection(tokens: list[_Token]) -> bool:
    """Whether the sentence opens with one capitalised word set off by a comma ("Sorry, ...", "Well, ...")."""
    return len(tokens) > 1 and tokens[0].text[0].isupper() and not tokens[1].joined and tokens[0].low not in _CLOSED


def _leads_common_phrase(tokens: list[_Token], index: int, owner: str) -> bool:
    """Whether a common noun phrase can start at tokens[index], given the word before it."""
    if owner == "to":  # "easiest to learn": an infinitive, unless a noun follows ("to cloud computing")
        after = tokens[index + 1] if index + 1 < len(tokens) else None
        return after is not None and after.joined and _content(after)
    if index == 0 or owner in _DETERMINERS | _PREPOSITIONS | _OWNERS | _QUANTIFIERS or owner.isdigit():
        return True
    return owner in _AUX and not _participle(tokens[index].low)  # "can be carried over" is a verb, not a noun


def _singular(low: str) -> str:
    return low[:-1] if low.endswith("s") and not low.endswith("ss") else low


def _relational(low: str) -> bool:
    return _singular(low) in _RELATIONAL_HEADS


def _inverted(tokens: list[_Token], at: int) -> bool:
    """Whether tokens[at] is an auxiliary before its subject: "did X show", "was X ethical", "why is X important"
    (the word after X is then a verb or a predicate); "what is X" and "who was X" are not, as what/who is the
    predicate there."""
    if at < 0 or tokens[at].low not in _AUX:
        return False
    return tokens[at].low in _INVERTING or at == 0 or tokens[at - 1].low in _WH - _words("what who which whose")


def _lead_index(tokens: list[_Token], index: int) -> int:
    """Where the word before a phrase's determiners and numbers is ("did" in "did all these languages"); -1: none."""
    back = index - 1
    while back >= 0 and tokens[back + 1].joined:
        low = tokens[back].low
        if low not in _DETERMINERS | _QUANTIFIERS and not low.isdigit():
            return back
        back -= 1
    return -1 if back < 0 or not tokens[back + 1].joined else back


def phrases(sentence: str) -> list[Phrase]:
    """Noun phrases of one sentence, in order: capitalised names and determiner/preposition/verb-led common phrases."""
    tokens, found, index = _tokens(sentence), [], 0
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
        if _capitalised(token):
            end = _name_end(tokens, index)
            start = tokens[index - 1].start if owner == "the" else token.start
            plural = tokens[end - 1].low.endswith("s")  # "the Brits call it": a plural name is followed by its verb
            if owner == "the" and not plural and not _inverted(tokens, at) and _head_noun_at(tokens, end):
                end += 1  # "the Neverending Story film", "the BBC experiment": a name modifying a noun
            text = sentence[start : tokens[end - 1].end]
            found.append(Phrase(text.removesuffix("'s").removesuffix("\u2019s"), True, owned, role, start))
            index = end
            continue
        if _content(token) and _leads_common_phrase(tokens, index, owner):
            end = _common_end(tokens, index, lead in _INVERTING)
            if end > index:
                if _singular(tokens[end - 1].low) in _OF_HEADS and end < len(tokens) and tokens[end].low == "of":
                    index, about_next = end + 1, True  # the phrase after "of" is the one that matters
                    continue
                start = tokens[index - 1].start if owner in _ARTICLES else token.start
                if owner.isdigit() and index > 1 and tokens[index - 1].joined and tokens[index - 2].low in _ARTICLES:
                    start = tokens[index - 2].start  # "a 529 plan", "the 2014 season": a number naming a kind
                text = sentence[start : tokens[end - 1].end]
                found.append(Phrase(text.removesuffix("'s").removesuffix("\u2019s"), False, owned, role, start))
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
        if low == "it" and _expletive(tokens, index):
            continue  # "is it true that ...", "is it possible to ..."
        kinds.add(kind)
        found.append((token, kind, low in _POSSESSIVE or (low == "her" and followed_by_noun)))
    return found


def _expletive(tokens: list[_Token], index: int) -> bool:
    """Whether "it" at `index` is a dummy subject: an adjective then the clause it stands for ("true that")."""
    after = tokens[index + 1 : index + 3]
    return len(after) == 2 and after[0].low in _EXPLETIVE_NEXT and after[1].low in _CLAUSE_OPENERS


def _fits(phrase: Phrase, kind: Kind) -> bool:
    if phrase.owned or (not phrase.name and _relational(phrase.key)):
        return False  # "its symptoms" is part of a chain; "the advantages" name a property of something else
    if kind == "person":
        return phrase.person
    if kind == "plural":
        return phrase.plural or (phrase.name and not phrase.person)
    return not phrase.plural and not (phrase.person and len(phrase.words) > 1)


def _same(one: Phrase, other: Phrase) -> bool:
    if one.name and other.name:
        numbers = {word for word in one.words if word.isdigit()}, {word for word in other.words if word.isdigit()}
        if all(numbers) and numbers[0] != numbers[1]:
            return False  # "iPhone 14" and "iPhone 15", "Project 3" and "Project 4" are different things
        return bool(set(one.words) & set(other.words) - _CONNECTORS)
    return not one.name and not other.name and one.key == other.key


_Mention = tuple[Phrase, float]


def _mentions(history: Sequence[Round]) -> list[_Mention]:
    """The noun phrases of the last rounds with their salience, the latest round first.

    Each earlier question is read with its own pronouns resolved, so a chain ("What is X?", "Is it Y?", "Why is it
    Z?") keeps X salient. Salience halves with each round back, which makes the latest round dominate and makes
    rounds before the last few irrelevant: they are not read at all, which bounds the work on long histories.
    """
    rounds: list[list[_Mention]] = []
    for user, assistant in history[-_MAX_ROUNDS:]:
        earlier = [mention for mentions in reversed(rounds) for mention in mentions]
        done = _resolve(user, earlier)
        first_sentence = _SENTENCE_END.split(assistant.strip(), maxsplit=1)[0]
        asked = [
            (replace(phrase, user=True), _USER_WEIGHT * phrase.role) for phrase in phrases(done[0] if done else user)
        ]
        answered = [(phrase, _ANSWER_WEIGHT * phrase.role) for phrase in phrases(first_sentence)]
        rounds = [[(phrase, weight * _DECAY) for phrase, weight in mentions] for mentions in rounds]
        rounds.append(asked + answered)
    return [mention for mentions in reversed(rounds) for mention in mentions]


def _topic(mentions: Sequence[_Mention], kind: Kind) -> str | None:
    """The phrase a `kind` pronoun most likely means: mentioned most, recently and by the user (a salience score)."""
    scored = _scored_topic(mentions, kind)
    if scored is None and kind == "plural":
        return _generic_plural(mentions)
    return scored[1] if scored else None


def _generic_plural(mentions: Sequence[_Mention]) -> str | None:
    """ "they" for a kind named in the singular: "a virtual machine" -> "virtual machines" (generic reference)."""
    generic = [phrase for phrase, _ in mentions if not phrase.name and phrase.words[0] in ("a", "an")]
    if not generic or not _fits(generic[0], "thing"):
        return None
    text = generic[0].text.split(" ", 1)[1]
    if text.endswith(("s", "x", "ch", "sh")):
        return text + "es"
    if text.endswith("y") and text[-2:-1] not in tuple("aeiou"):
        return text[:-1] + "ies"
    return text + "s"


def _scored_topic(mentions: Sequence[_Mention], kind: Kind) -> tuple[float, str] | None:
    best: tuple[float, Phrase] | None = None
    for phrase, _ in mentions:
        if not _fits(phrase, kind):
            continue
        score = sum(weight for other, weight in mentions if _same(phrase, other))
        if best is None or score > best[0] + 1e-9:
            best = (score, phrase)
    if best is None:
        return None
    # Name it as fully as any mention of the right number did ("Weeb" -> "Weeb Ewbank"), not pronoun-owned ones.
    forms = [other for other, _ in mentions if _same(best[1], other) and _fits(other, kind)]
    return best[0], max(forms, key=lambda other: (len(other.words), other.name)).text if forms else best[1].text


def _bridges(query: str, mentions: Sequence[_Mention]) -> list[tuple[int, str]]:
    """(where, "of X") for each relational head in `query` left without its argument: "What are the main
    advantages?" asks about the topic's advantages (an implicit argument, as in bridging anaphora)."""
    found: list[tuple[int, str]] = []
    named = phrases(query)
    if any(phrase.name for phrase in named):
        return found  # "What sort of history does Turkana have?": the name may be the argument
    for phrase in named:
        end = phrase.start + len(phrase.text)
        following = _NEXT_WORD.match(query, end)
        if phrase.owned or not _relational(phrase.key) or query[end:].startswith(("'", "\u2019")):
            continue
        if following and (following.group(1).lower() in _DETERMINERS or _content(_tokens(following.group(1))[0])):
            continue  # "did that cause the band to break up": a verb with its object, not a noun
        topics = [topic for kind in ("thing", "plural") if (topic := _scored_topic(mentions, kind)) is not None]
        if topics:
            found.append((end, max(topics)[1]))
    return found


def _fuller(phrase: Phrase, mentions: Sequence[_Mention]) -> Phrase | None:
    """The longest earlier mention that names `phrase` more fully: "King" -> "Billie Jean King", "the pledge" ->
    "the taxpayer protection pledge" (a short name or a definite description repeats an earlier, fuller one)."""
    own = set(phrase.words) - _ARTICLES
    best: Phrase | None = None
    for other, _ in mentions:
        fuller = set(other.words) - _ARTICLES
        if other.owned or not own < fuller or (best is not None and len(best.words) >= len(other.words)):
            continue
        if phrase.name and other.name and (other.words[-1] in phrase.words or other.words[0] in phrase.words):
            best = other  # a first or a last name of the fuller name
        elif not phrase.name and phrase.key == other.key and other.user and other.words[0] not in ("a", "an"):
            best = other  # the user's own definite phrase with the same head noun and more modifiers
    return best


def _expansions(query: str, mentions: Sequence[_Mention]) -> list[tuple[int, int, str]]:
    """(start, end, fuller text) for each short name or definite description in `query` named more fully before."""
    found = []
    for phrase in phrases(query):
        before = query[: phrase.start].split()
        definite = phrase.words[0] == "the" or (before and before[-1].lower() in _DEFINITE)
        if not phrase.name and not definite:
            continue  # "a plan", "plans": an indefinite phrase introduces something new
        fuller = _fuller(phrase, mentions)
        if fuller is None:
            continue
        start = phrase.start if phrase.words[0] == "the" or phrase.name else query.rindex(before[-1], 0, phrase.start)
        found.append((start, phrase.start + len(phrase.text), fuller.text))
    return found


def _replacement(query: str, start: int, end: int, text: str) -> str:
    """`text` fitted into `query` at start:end: capitalised at the start, an article lowered mid-sentence."""
    if start == 0:
        text = text[0].upper() + text[1:]
    elif text.split(" ", 1)[0] in ("The", "A", "An"):
        text = text[0].lower() + text[1:]  # "The Eiffel Tower is ..." started a sentence; this is mid-way
    return text


def _resolve(query: str, mentions: Sequence[_Mention]) -> tuple[str, str] | None:
    edits: list[tuple[int, int, str, str]] = []
    own = phrases(query)
    for token, kind, possessive in _english_references(query):
        if any(_fits(phrase, kind) and _NEXT_CLAUSE.search(query, phrase.start, token.start) for phrase in own):
            continue  # "What is the Galileo system and why is it important?": bound by an earlier conjunct
        phrase = _topic(mentions, kind)
        if phrase is None or phrase.lower() in query.lower():
            continue
        if possessive:
            phrase += "'" if phrase.endswith("s") else "'s"
        edits.append((token.start, token.end, token.text, phrase))
    for start, end, fuller in _expansions(query, mentions):
        if fuller.lower() not in query.lower() and all(end <= s or start >= e for s, e, _, _ in edits):
            edits.append((start, end, query[start:end], fuller))
    for end, topic in _bridges(query, mentions):
        if topic.lower() not in query.lower() and all(end <= s or end >= e for s, e, _, _ in edits):
            edits.append(
                (end, end, "", " of " + (topic[0].lower() + topic[1:] if topic.startswith(("The ", "A ")) else topic))
            )
    if not edits:
        return None
    text = query
    for start, end, _, phrase in sorted(edits, key=lambda edit: -edit[0]):
        text = text[:start] + _replacement(text, start, end, phrase) + text[end:]
    said = ", ".join(f"{old}->{new}" if old else f"+{new.strip()}" for _, _, old, new in sorted(edits))
    return text, f"resolved {said}"


def rewrite_english(query: str, history: Sequence[Round]) -> tuple[str, str] | None:
    """`query` with its pronouns replaced by what they most likely mean, and what was done; None when nothing was."""
    return _resolve(query, _mentions(history))
