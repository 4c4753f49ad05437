"""English pronoun resolution without a tagger: candidates ranked by salience, chains, fuller names, bridging."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from rag.rewrite import Round
from rag.rewrite_rules.phrases import (
    ARTICLES,
    CONNECTORS,
    DETERMINERS,
    PRONOUNS,
    Kind,
    Phrase,
    Token,
    capitalised,
    content,
    phrases,
    relational,
    singular,
    superlative,
    tokenize,
    word_set,
)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_NEXT_WORD = re.compile(r" +([^\W_]+)")
# A second question joined by "and": "What is X and why is it important?"
_NEXT_CLAUSE = re.compile(r"\band (?:what|why|how|when|where|who|which|is|are|was|were|do|does|did|can)\b", re.I)
_POSSESSIVE = frozenset({"his", "its", "their"})
_DEMONSTRATIVE = frozenset({"these", "those"})
# After these, "these"/"those" refer to events or statements, not to a noun phrase ("after those", "like those").
_NOT_AFTER = word_set(
    "after before besides since like than so such now about despite beyond say said think know believe true "
    "mean means hope suggest show shows showed"
)
_GROUPS = word_set("band group team club clan crew company party league family people")
_DEFINITE = frozenset({"the", "this", "that", "these", "those"})
_CLAUSE_OPENERS = word_set("that to whether if for")
_EXPLETIVE_NEXT = word_set("true possible likely known said reported believed important necessary hard easy")
# Salience: a user's own words weigh four times an answer's (an answer is a weak source: it may be a fixed text),
# and each round back counts half as much, so the latest round dominates; 8 rounds back weigh under 1%.
_USER_WEIGHT, _ANSWER_WEIGHT, _DECAY = 2.0, 0.5, 0.5
_MAX_ROUNDS = 8
# The opening round sets the conversation's topic, so it never weighs less than a quarter of the latest round.
_OPENING_FLOOR = 0.25
# What is read of each earlier question and answer: a referent is named early, and the salience sums are
# quadratic in the number of phrases, so an answer without full stops must not make them unbounded.
_MAX_CHARS = 300
# "they" for a name that looks like a person's (a band, or singular "they") is half as likely as for a plural.
_SINGULAR_THEY = 0.5


def _english_references(query: str) -> list[tuple[Token, Kind, bool]]:
    """(token, kind, possessive) for each pronoun in `query` that refers back to something, first one per kind."""
    tokens, found, kinds = tokenize(query), [], set()
    for index, token in enumerate(tokens):
        kind = PRONOUNS.get(token.text.lower())
        if kind is None or kind in kinds:
            continue
        low = token.text.lower()
        before = tokens[index - 1].low if index else ""
        after = tokens[index + 1] if index + 1 < len(tokens) else None
        followed_by_noun = after is not None and after.joined and (content(after) or capitalised(after))
        if low in _DEMONSTRATIVE and (followed_by_noun or before in _NOT_AFTER):
            continue  # a determiner ("this album"), a conjunction ("so that") or an event ("after that")
        if low == "it" and _expletive(tokens, index):
            continue  # "is it true that ...", "is it possible to ..."
        kinds.add(kind)
        found.append((token, kind, low in _POSSESSIVE or (low == "her" and followed_by_noun)))
    return found


def _expletive(tokens: list[Token], index: int) -> bool:
    """Whether "it" at `index` is a dummy subject: an adjective then the clause it stands for ("true that")."""
    after = tokens[index + 1 : index + 3]
    return len(after) == 2 and after[0].low in _EXPLETIVE_NEXT and after[1].low in _CLAUSE_OPENERS


def _fits(phrase: Phrase, kind: Kind) -> bool:
    if phrase.owned or (not phrase.name and relational(phrase.key)):
        return False  # "its symptoms" is part of a chain; "the advantages" name a property of something else
    if kind == "person":
        return phrase.person
    if kind == "plural":
        # A name without "the" can be a group ("INXS", "Skunk Anansie": a name that looks like a person's counts
        # less, see _scored_topic); with "the", a plural or a group noun can ("the Beatles", "the Wu-Tang Clan"),
        # and anything else is one thing ("the US").
        group = phrase.words[0] != "the" or bool(_GROUPS.intersection(phrase.words))
        return phrase.plural or (phrase.name and group)
    return not phrase.plural and not (phrase.person and len(phrase.words) > 1)


def _same(one: Phrase, other: Phrase) -> bool:
    if one.name and other.name:
        numbers = {word for word in one.words if word.isdigit()}, {word for word in other.words if word.isdigit()}
        if all(numbers) and numbers[0] != numbers[1]:
            return False  # "iPhone 14" and "iPhone 15", "Project 3" and "Project 4" are different things
        return bool(set(one.words) & set(other.words) - CONNECTORS)
    return not one.name and not other.name and one.key == other.key


_Mention = tuple[Phrase, float]


def _mentions(history: Sequence[Round]) -> list[_Mention]:
    """The noun phrases of the last rounds with their salience, the latest round first.

    Each earlier question is read with its own pronouns resolved, so a chain ("What is X?", "Is it Y?", "Why is it
    Z?") keeps X salient. Salience halves with each round back, which makes the latest round dominate and makes
    rounds before the last few irrelevant: they are not read at all, which bounds the work on long histories.
    The opening round, which sets the conversation's topic, never weighs less than `_OPENING_FLOOR`.
    """
    window = list(history[-_MAX_ROUNDS:])
    if len(history) > _MAX_ROUNDS:
        window[0] = history[0]
    rounds: list[list[_Mention]] = []
    for user, assistant in window:
        user = user[:_MAX_CHARS]
        done = _resolve(user, _weighed(rounds))
        first_sentence = _SENTENCE_END.split(assistant[: 2 * _MAX_CHARS].strip(), maxsplit=1)[0][:_MAX_CHARS]
        asked = [
            (replace(phrase, user=True), _USER_WEIGHT * phrase.role) for phrase in phrases(done[0] if done else user)
        ]
        answered = [(_from_the_user(phrase), _ANSWER_WEIGHT * phrase.role) for phrase in phrases(first_sentence)]
        rounds.append(asked + answered)
    return _weighed(rounds)


def _from_the_user(phrase: Phrase) -> Phrase:
    """An answer's phrase as the user would say it: the bot's "your password" is the user's "my password"."""
    first, _, rest = phrase.text.partition(" ")
    swapped = {"your": "my", "Your": "My", "my": "your", "My": "Your"}.get(first)
    return replace(phrase, text=f"{swapped} {rest}") if swapped and rest else phrase


def _weighed(rounds: list[list[_Mention]]) -> list[_Mention]:
    """The mentions of `rounds` (oldest first) weighed by their age, the latest round first."""
    weighed: list[_Mention] = []
    for back, mentions in enumerate(reversed(rounds)):
        factor = _DECAY**back if back < len(rounds) - 1 else max(_DECAY**back, _OPENING_FLOOR)
        weighed.extend((phrase, weight * factor) for phrase, weight in mentions)
    return weighed


def _topic(mentions: Sequence[_Mention], kind: Kind) -> str | None:
    """The phrase a `kind` pronoun most likely means: mentioned most, recently and by the user (a salience score)."""
    scored = _scored_topic(mentions, kind)
    if scored is None and kind == "plural":
        return _generic_plural(mentions)
    if scored is None and kind == "thing":
        names = [phrase for phrase, _ in mentions if phrase.name and not phrase.plural and not phrase.owned]
        return names[0].text if names else None  # "Red Bull" looked like a person's name; "it" says it is not
    return scored[1] if scored else None


def _generic_plural(mentions: Sequence[_Mention]) -> str | None:
    """ "they" for a kind named in the singular: "a virtual machine" -> "virtual machines" (generic reference)."""
    generic = [phrase for phrase, _ in mentions if not phrase.name and phrase.words[0] in ("a", "an")]
    if not generic or not _fits(generic[0], "thing"):
        return None
    return _plural(generic[0].text.split(" ", 1)[1])


def _plural(text: str) -> str:
    """The regular English plural of a noun phrase: its last word with -s, -es or -ies."""
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
        if kind == "plural" and phrase.person:
            score *= _SINGULAR_THEY  # a name that looks like a person's: a band's or singular "they", less likely
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
        if phrase.owned or not relational(phrase.key) or query[end:].startswith(("'", "\u2019")):
            continue
        if following and (following.group(1).lower() in DETERMINERS or content(tokenize(following.group(1))[0])):
            continue  # "did that cause the band to break up": a verb with its object, not a noun
        topics = [topic for kind in ("thing", "plural") if (topic := _scored_topic(mentions, kind)) is not None]
        if topics:
            found.append((end, max(topics)[1]))
    return found


def _elided_heads(query: str, mentions: Sequence[_Mention]) -> list[tuple[int, str]]:
    """(where, " noun") for each superlative standing without its noun: "What is the largest ever caught?" after
    talk of sharks asks for "the largest shark" (a superlative licenses the noun's ellipsis; the topic supplies it)."""
    words = tokenize(query)
    found: list[tuple[int, str]] = []
    for index, token in enumerate(words[1:-1], start=1):
        after = words[index + 1]
        if words[index - 1].low != "the" or not superlative(token.low) or (after.joined and content(after)):
            continue
        if any(content(word) for word in words[: index - 1]):
            continue  # "which language would be the easiest": the question names the kind itself
        topics = [topic for kind in ("thing", "plural") if (topic := _scored_topic(mentions, kind)) is not None]
        head = max(topics)[1].split()[-1] if topics else ""
        if head.islower() and head.isalpha():
            found.append((token.end, " " + singular(head)))
    return found


def _ones(query: str, mentions: Sequence[_Mention]) -> list[tuple[int, int, str]]:
    """(start, end, noun) for "ones" standing for the topic's noun: "What are the most important ones?" after
    "What is a genre?" asks for "the most important genres" ("one"-anaphora repeats a noun, not a referent)."""
    found: list[tuple[int, int, str]] = []
    for token in tokenize(query):
        if token.low != "ones":
            continue
        topics = [topic for kind in ("thing", "plural") if (topic := _scored_topic(mentions, kind)) is not None]
        if topics and max(topics)[1].split()[-1].islower():
            noun = max(topics)[1].removeprefix("the ").removeprefix("a ").removeprefix("an ")
            found.append((token.start, token.end, noun if noun.endswith("s") else _plural(noun)))
    return found


def _fuller(phrase: Phrase, mentions: Sequence[_Mention]) -> Phrase | None:
    """The longest earlier mention that names `phrase` more fully: "King" -> "Billie Jean King", "the pledge" ->
    "the taxpayer protection pledge" (a short name or a definite description repeats an earlier, fuller one)."""
    own = set(phrase.words) - ARTICLES
    best: Phrase | None = None
    for other, _ in mentions:
        fuller = set(other.words) - ARTICLES
        if other.owned or not own < fuller or (best is not None and len(best.words) >= len(other.words)):
            continue
        if phrase.name and other.name and (other.words[-1] in phrase.words or other.words[0] in phrase.words):
            best = other  # a first or a last name of the fuller name
        elif (
            not phrase.name
            and phrase.key == other.key
            and (other.words[0] == "the" or other.text.split()[-1].islower())  # not "the braxton" -> "Tamar Braxton"
            and other.user
            and other.words[0] not in ("a", "an")
        ):
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
    elif text.split(" ", 1)[0] in ("The", "A", "An", "My", "Our", "Your"):
        text = text[0].lower() + text[1:]  # "The Eiffel Tower is ..." started a sentence; this is mid-way
    return text


def _named_in(own: Sequence[Phrase], topic: str) -> bool:
    """Whether the query already names `topic`, maybe in short ("Toussaint ... his career" for Allen Toussaint)."""
    words = set(Phrase(topic, name=True, owned=False).words)
    return any(phrase.name and set(phrase.words) - CONNECTORS <= words for phrase in own)


def _resolve(query: str, mentions: Sequence[_Mention]) -> tuple[str, str] | None:
    edits: list[tuple[int, int, str, str]] = []
    own = phrases(query)
    for token, kind, possessive in _english_references(query):
        if any(_fits(phrase, kind) and _NEXT_CLAUSE.search(query, phrase.start, token.start) for phrase in own):
            continue  # "What is the Galileo system and why is it important?": bound by an earlier conjunct
        phrase = _topic(mentions, kind)
        if phrase is None or phrase.lower() in query.lower() or _named_in(own, phrase):
            continue
        if possessive:
            phrase += "'" if phrase.endswith("s") else "'s"
        edits.append((token.start, token.end, token.text, phrase))
    for start, end, fuller in _expansions(query, mentions):
        if fuller.lower() not in query.lower() and all(end <= s or start >= e for s, e, _, _ in edits):
            edits.append((start, end, query[start:end], fuller))
    for start, end, noun in _ones(query, mentions):
        edits.append((start, end, "ones", noun))
    for end, head in _elided_heads(query, mentions):
        if all(end <= s or end >= e for s, e, _, _ in edits):
            edits.append((end, end, "", head))
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
