"""Checks and cleans a person's question before it reaches retrieval: refusals for unusable text, a cap on length."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final, Literal

Refusal = Literal["empty", "no_words", "unreadable"]
"""Why a question cannot be answered: nothing but whitespace or controls, no word at all, or garbled bytes. The bot
words each reason in the asker's language."""

_REPLACEMENT: Final = "\ufffd"
_BOM: Final = "\ufeff"
_KEEP_CONTROLS: Final = frozenset("\n\t")
# Where a cut may fall, best first: after a sentence end (ASCII or full-width), then after any whitespace.
_SENTENCE_END: Final = re.compile(r"[.!?…](?=\s|$)|[。！？\n]")
_WHITESPACE: Final = re.compile(r"\s")


@dataclass(frozen=True, slots=True)
class QuestionCheck:
    """The verdict on one question: the cleaned text to use, or why it is refused.

    `truncated` means the question was over the length cap and `text` holds only its start; the question is
    still answered (a person who pasted a 20,000-character question gets an answer and a notice, not a wall).
    """

    ok: bool
    text: str
    refusal: Refusal | None = None
    truncated: bool = False


def decode_user_bytes(data: bytes) -> str:
    """Decodes bytes from a platform as UTF-8, dropping a leading BOM and turning invalid bytes into U+FFFD.

    It never raises: invalid input is replaced rather than rejected here so that `check_question` gives the
    person one clear refusal ("unreadable") instead of the turn failing with a decoding error.
    """
    return data.decode("utf-8-sig", errors="replace")


def clean_question(text: str) -> str:
    """NFC-normalised `text` with line ends unified, control characters (but \\n and \\t) and BOMs removed, stripped."""
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    return "".join(
        ch for ch in text if ch != _BOM and (ch in _KEEP_CONTROLS or unicodedata.category(ch) != "Cc")
    ).strip()


def check_question(text: str, *, max_chars: int = 4000) -> QuestionCheck:
    """Cleans a question and says whether it can be answered; over-long questions are cut, not refused."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    # U+FFFD marks bytes that were not valid UTF-8; lone surrogates come from bad JSON escapes ("\ud800").
    # Either way part of the message is lost, and answering a question we cannot read would mislead.
    if any(ch == _REPLACEMENT or "\ud800" <= ch <= "\udfff" for ch in text):
        return QuestionCheck(ok=False, text="", refusal="unreadable")
    cleaned = clean_question(text)
    if not cleaned:
        return QuestionCheck(ok=False, text="", refusal="empty")
    if not any(unicodedata.category(ch)[0] in "LN" for ch in cleaned):
        return QuestionCheck(ok=False, text=cleaned, refusal="no_words")
    if len(cleaned) <= max_chars:
        return QuestionCheck(ok=True, text=cleaned)
    return QuestionCheck(ok=True, text=truncate_text(cleaned, max_chars), truncated=True)


def truncate_text(text: str, max_chars: int) -> str:
    """The start of `text`, at most `max_chars` long, cut after a sentence if one ends in its second half,
    else at whitespace there, else mid-word (text without spaces, such as Chinese without punctuation)."""
    if len(text) <= max_chars:
        return text
    window = text[: max_chars + 1]  # one more, so a boundary right at the limit is seen
    floor = max_chars // 2  # a cut earlier than this would lose too much of the question
    sentence_ends = [m.end() for m in _SENTENCE_END.finditer(window) if floor <= m.end() <= max_chars]
    if sentence_ends:
        return text[: sentence_ends[-1]].rstrip()
    spaces = [m.start() for m in _WHITESPACE.finditer(window) if floor <= m.start() <= max_chars]
    if spaces:
        return text[: spaces[-1]].rstrip()
    cut = max_chars
    # Do not leave a combining mark (or a zero-width joiner of an emoji sequence) without its base.
    while cut > 1 and (unicodedata.combining(text[cut]) or text[cut] == "\u200d" or text[cut - 1] == "\u200d"):
        cut -= 1
    return text[:cut]


SmallTalk = Literal["greeting", "thanks"]
"""A message that is only a greeting or only thanks: no question to look up. The bot words its reply."""

# Whole messages only, after case folding and with punctuation, emoji and a trailing address ("bot", "all") dropped:
# "hi, how do I reset my password?" is a question, never small talk.
_GREETING: Final = re.compile(
    r"(?:hi|hii+|hello|hallo|hey|heya|hiya|howdy|greetings|good (?:morning|afternoon|evening|day)|"
    r"你好|您好|嗨|哈喽|哈啰|早|早上好|上午好|下午好|晚上好|大家好|你好啊|你好呀|您好啊)"
)
_THANKS: Final = re.compile(
    r"(?:thanks?|thank you|thankyou|thx|ty|tysm|cheers|many thanks|thanks a lot|thanks so much|thank you so much|"
    r"thank you very much|thanks very much|thanks again|thank you again|much appreciated|"
    r"谢谢|谢谢你|谢谢您|谢谢啦|谢啦|多谢|感谢|非常感谢|太感谢了|谢谢了|好的谢谢|好的，谢谢)"
)
_ADDRESS: Final = frozenset({"there", "all", "everyone", "bot", "ragbot", "you", "again", "guys", "team"})
_NOT_WORDS: Final = re.compile(r"[^\w\s\u3400-\u9fff]+")


def small_talk(text: str) -> SmallTalk | None:
    """ "greeting" or "thanks" when the whole message is one ("hi!", "Thanks a lot :)", "你好", "谢谢！"), else None."""
    plain = " ".join(_NOT_WORDS.sub(" ", text.casefold()).split())
    if len(plain) > 40:
        return None
    if _THANKS.fullmatch(plain) or _THANKS.fullmatch(_strip_address(plain)):
        return "thanks"
    if _GREETING.fullmatch(plain) or _GREETING.fullmatch(_strip_address(plain)):
        return "greeting"
    return None


def _strip_address(plain: str) -> str:
    """`plain` without the words that address someone at its end ("hi there", "thanks bot")."""
    words = plain.split()
    while len(words) > 1 and words[-1] in _ADDRESS:
        words.pop()
    return " ".join(words)
