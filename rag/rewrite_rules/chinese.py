"""Chinese rules on jieba part-of-speech tags: 他/她/它/其/这个 resolved from the last round, and "X呢" completed."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import jieba

from rag.rewrite import Round
from rag.rewrite_rules.phrases import Kind

if TYPE_CHECKING:
    from jieba.posseg import POSTokenizer

CJK = re.compile(r"[\u4e00-\u9fff]")
_ZH_PRONOUNS: dict[str, Kind] = {
    "他": "person", "她": "person", "他们": "plural", "她们": "plural",
    "它": "thing", "它们": "plural", "其": "thing", "这个": "thing", "那个": "thing", "这": "thing", "那": "thing",
}  # fmt: skip
_ZH_NOUN_FLAGS = frozenset({"n", "nr", "nrfg", "nrt", "ns", "nt", "nz", "vn", "eng"})
_ZH_ENTITY_FLAGS = frozenset({"nr", "nrfg", "nrt", "ns", "nt", "nz", "eng"})
# Tags that a bare name never carries (pronouns, verbs, particles, adverbs, conjunctions, numbers).
_ZH_NOT_NAME = frozenset({"r", "v", "y", "d", "c", "p", "uj", "ul", "uz", "e", "m", "q", "o", "l", "zg"})
_ZH_THIRD_PERSON = re.compile("[他她它]")
# First letters of the tags of a clause's head: a verb, an adjective or a question pronoun ("怎么", "什么").
_ZH_PREDICATE_FLAGS = frozenset("var")
_ZH_NOT_THING = frozenset({"r", "y", "d", "c", "p", "uj", "ul", "e", "o"})
_ZH_PERSON_ENDS = frozenset("人友哥姐弟妹爸妈师生员长婆公儿子")
_ZH_GENERIC = frozenset({
    "时候", "东西", "大家", "感觉", "意思", "名字", "事情", "问题",
    "办法", "样子", "地方", "时间", "朋友", "人家", "机器人",
})  # fmt: skip
# "你知道X吗", "喜欢X": X is what the question is about.
_ZH_ABOUT = re.compile(
    r"(?:知道|认识|喜欢|看过|听过|了解|觉得|描述一下|说说|介绍一下|推荐)(?P<x>[^，,。？?！!吗么嘛呢啊呀]{2,8}?)"
    r"(?:吗|么|嘛|呢|啊|呀|怎么样|如何|咋样)?[？?！!。]*$"
)
_ZH_ELLIPSIS = re.compile(r"^(?:那么?|还有)?(?P<x>[^，,。？?！!]{1,8}?)呢[？?]*$")
_ZH_SENTENCE_END = re.compile(r"(?<=[。！？!?])")
# Names are repeated within a few dozen characters; the cap keeps the longest-common-substring search cheap.
_SHARED_SPAN_CHARS = 120


class _Segmenter:
    """jieba part-of-speech tagging on a private dictionary, built once off the event loop (~1 s)."""

    def __init__(self) -> None:
        self._tagger: POSTokenizer | None = None
        self._lock = threading.Lock()

    @property
    def ready(self) -> bool:
        return self._tagger is not None

    def load(self) -> None:
        with self._lock:
            if self._tagger is None:
                # Imported here: jieba.posseg loads its tag tables (~0.3 s) at import, and most processes never tag.
                from jieba.posseg import POSTokenizer

                jieba.setLogLevel(logging.WARNING)
                tokenizer = jieba.Tokenizer()
                tokenizer.initialize()
                self._tagger = POSTokenizer(tokenizer)

    def tag(self, text: str) -> list[tuple[str, str]]:
        self.load()
        assert self._tagger is not None
        return [(pair.word, pair.flag) for pair in self._tagger.cut(text)]


def _noun_runs(tagged: list[tuple[str, str]], flags: frozenset[str] = _ZH_NOUN_FLAGS) -> list[str]:
    runs, current = [], ""
    for word, flag in [*tagged, ("", "x")]:
        if flag in flags or (current and (word == " " or (word.isascii() and word.isdigit()))):  # "iPhone 15"
            current += word
        else:
            if len(current.strip()) >= 2 and current.strip() not in _ZH_GENERIC:
                runs.append(current.strip())
            current = ""
    return runs


def _shared_span(first: str, second: str) -> str | None:
    """The longest run of at least 2 CJK/latin characters in both texts (names are repeated, not tagged well)."""
    first, second, best = first[:_SHARED_SPAN_CHARS], second[:_SHARED_SPAN_CHARS], ""
    for start in range(len(first)):
        for end in range(len(first), start + max(len(best), 1), -1):
            piece = first[start:end]
            if piece in second and re.fullmatch(r"[\u4e00-\u9fffA-Za-z0-9 ]+", piece):
                best = piece
                break
    return best.strip() if len(best.strip()) >= 2 else None


class ChineseRules:
    """Resolves Chinese pronouns from the latest round and completes "X呢"; jieba's tagger loads on first use."""

    def __init__(self) -> None:
        self._segmenter = _Segmenter()

    @property
    def ready(self) -> bool:
        """Whether jieba's dictionary is loaded (loading takes about a second; do it off the event loop)."""
        return self._segmenter.ready

    def load(self) -> None:
        """Load jieba's dictionary (blocking)."""
        self._segmenter.load()

    def _topic(self, history: Sequence[Round], kind: Kind) -> str | None:
        """What the latest round is about: a bare name, "你知道X吗", a phrase both speakers used, or a noun run."""
        for user, answer in reversed(history):
            user, assistant = user.strip(), _ZH_SENTENCE_END.split(answer.strip(), maxsplit=1)[0]
            tagged = self._segmenter.tag(user)
            if len(user) <= 6 and CJK.search(user) and not any(flag in _ZH_NOT_NAME for _, flag in tagged):
                return user  # the user only said a name ("华晨宇"), which jieba often cuts into pieces
            about = _ZH_ABOUT.search(user)
            if about is not None and self._nameable(about.group("x")):
                return about.group("x")
            shared = _shared_span(user, assistant)
            if shared is not None and self._nameable(shared) and _noun_runs(self._segmenter.tag(shared)):
                return shared
            tags = [tagged, self._segmenter.tag(assistant)]
            runs = [run for text in tags for run in _noun_runs(text, _ZH_ENTITY_FLAGS)]
            if kind != "person":
                runs = runs or [run for text in tags for run in _noun_runs(text)]
            else:  # 他/她 stands for a name, or for a noun that names a person ("我同学", "男朋友")
                runs = runs or [run for text in tags for run in _noun_runs(text) if run[-1] in _ZH_PERSON_ENDS]
            if runs:
                return runs[0]
        return None

    def _nameable(self, text: str) -> bool:
        """Whether `text` can stand for a thing: no pronoun, adverb, particle or interjection in it."""
        return not any(flag in _ZH_NOT_THING for _, flag in self._segmenter.tag(text))

    def rewrite(self, query: str, history: Sequence[Round]) -> tuple[str, str] | None:
        """`query` with its reference resolved or its ellipsis completed, and what was done; None when neither."""
        tagged = self._segmenter.tag(query)
        for index, (word, flag) in enumerate(tagged):
            kind = _ZH_PRONOUNS.get(word)
            if kind is None or flag != "r":
                continue
            after = tagged[index + 1] if index + 1 < len(tagged) else ("", "x")
            if word in ("这", "那") and not (after[0] in ("是", "就是") or not after[0]):
                continue  # "那你…" is "then", "你那有" is "there"; only "这是…" and a final "这" refer back
            span = word
            if word in ("这个", "那个") and after[1] in _ZH_NOUN_FLAGS:
                span += after[0]  # "这个小说" -> "权利的游戏": the named thing replaces the whole phrase
            topic = self._topic(history, kind)
            if topic is None or topic in query:
                return None
            start = sum(len(piece) for piece, _ in tagged[:index])
            phrase = topic + "的" if word == "其" else topic
            return query[:start] + phrase + query[start + len(span) :], f"resolved {span}->{topic}"
        done = self._complete_ellipsis(query, history)
        return done if done is not None else self._complete_zero_argument(query, tagged, history)

    def _complete_zero_argument(
        self, query: str, tagged: list[tuple[str, str]], history: Sequence[Round]
    ) -> tuple[str, str] | None:
        """'怎么拆' after '会修电脑吗' -> '电脑怎么拆': a clause that names nothing at all leaves its subject or object
        unsaid (Chinese drops arguments that the topic supplies); the topic is put first, as Chinese topicalises."""
        if any(flag in _ZH_NOUN_FLAGS | {"m"} or _ZH_THIRD_PERSON.search(word) for word, flag in tagged):
            return None  # it names something, a quantity ("几天") or someone: not a bare comment on the topic
        if _ZH_ELLIPSIS.match(query.strip()):
            return None  # "那你呢" asks about the remnant ("你"), not about the topic
        if not any(flag[0] in _ZH_PREDICATE_FLAGS for _, flag in tagged):
            return None  # no verb, adjective or question word: an interjection, not a clause
        topic = self._topic(history, "thing")
        if topic is None or topic in query:
            return None
        return topic + query.strip(), f"zero argument: {topic}"

    def _complete_ellipsis(self, query: str, history: Sequence[Round]) -> tuple[str, str] | None:
        """'那北京呢' after '上海的天气怎么样' -> '北京的天气怎么样'; '价格呢' after 'X怎么样' -> 'X的价格呢'."""
        match = _ZH_ELLIPSIS.match(query.strip())
        if match is None:
            return None
        new = match.group("x")
        previous = history[-1][0].strip().rstrip("？?")
        new_tags = self._segmenter.tag(new)
        if not previous or len(new_tags) != 1 or new_tags[0][1] not in _ZH_NOUN_FLAGS:
            return None
        flag = new_tags[0][1]
        old_tags = self._segmenter.tag(previous)
        if flag in _ZH_ENTITY_FLAGS:
            same = [word for word, other in old_tags if other == flag]
            if len(same) == 1 and same[0] != new:
                return previous.replace(same[0], new, 1), f"ellipsis {same[0]}->{new}"
            return None
        entities = _noun_runs(old_tags, _ZH_ENTITY_FLAGS)
        if len(entities) == 1:
            return f"{entities[0]}的{new}呢", f"ellipsis {new} of {entities[0]}"
        return None
