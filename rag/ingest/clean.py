"""Text cleaning before splitting: Dify's default rules, always on, and its two optional ones."""

from __future__ import annotations

import re

# Control characters go, except tab and newline. The line-breaking ones (vertical tab, form feed,
# next line, Unicode line and paragraph separators) become newlines so the words either side stay
# apart: PDF extractors put a form feed between pages. U+FFFE and U+FFFF are noncharacters. (Dify's
# pattern lists "\xEF\xBF\xBE", the UTF-8 bytes of U+FFFE, in a str pattern, where they are the
# letters "ï¿¾": it deletes those from real text and leaves U+FFFE in place.)
_BREAKS = {0x0B: "\n", 0x0C: "\n", 0x85: "\n", 0x2028: "\n", 0x2029: "\n"}
_REMOVED = [*range(0x00, 0x09), *range(0x0E, 0x20), *range(0x7F, 0xA0), 0xFFFE, 0xFFFF]
_TRANSLATION: dict[int, str | None] = {**dict.fromkeys(_REMOVED), **_BREAKS}

_SPACES = re.compile(r"[^\S\n]{2,}")  # runs of whitespace other than newlines
_TRAILING_SPACES = re.compile(r"[^\S\n]+\n")
_BLANK_LINES = re.compile(r"\n{3,}")

# Markdown images and links keep their alt text and link text; the target (and its optional "title")
# goes. One level of balanced parentheses is allowed inside a target, as in Wikipedia URLs.
_TARGET = r"\(\s*<?(?:[^()\s<>]|\([^()\s]*\))*>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)"
_MARKDOWN_IMAGE = re.compile(r"!\[([^\]]*)\]" + _TARGET)
_MARKDOWN_LINK = re.compile(r"\[([^\]]*)\]" + _TARGET)
_AUTOLINK = re.compile(r"<(?:(?:https?|ftp)://|mailto:|www\.)[^<>\s]*>|<[\w.%+-]+@[\w-]+(?:\.[\w-]+)+>")
_EMAIL = re.compile(r"(?:mailto:)?[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
# URLs are ASCII: this stops at the first Chinese character ("见https://a.cn获取" keeps 获取).
_URL = re.compile(r"(?:(?:https?|ftp)://|www\.)[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+", re.IGNORECASE)
_URL_TAIL = ".,;:!?'\""  # sentence punctuation right after a URL belongs to the sentence


def clean(text: str, *, remove_extra_whitespace: bool = False, remove_urls_emails: bool = False) -> str:
    """Text with the default rules applied (newlines normalised, control characters and `<|` `|>` markers
    removed), then optionally URLs and emails removed and whitespace runs collapsed."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(_TRANSLATION)
    # Chat-template markers such as <|im_start|> must not reach a prompt whole (Dify's default rule).
    text = text.replace("<|", "<").replace("|>", ">")
    if remove_urls_emails:
        text = _remove_urls_emails(text)
    if remove_extra_whitespace:
        text = _SPACES.sub(" ", text)
        text = _TRAILING_SPACES.sub("\n", text)
        text = _BLANK_LINES.sub("\n\n", text)
    return text


def _remove_urls_emails(text: str) -> str:
    text = _MARKDOWN_IMAGE.sub(r"\1", text)
    text = _MARKDOWN_LINK.sub(r"\1", text)
    text = _AUTOLINK.sub("", text)
    text = _URL.sub(_url_remainder, text)
    return _EMAIL.sub("", text)


def _url_remainder(match: re.Match[str]) -> str:
    """What follows the URL proper: trailing sentence punctuation and unbalanced closing brackets."""
    url = match.group()
    end = len(url)
    while end:
        char = url[end - 1]
        if (
            char in _URL_TAIL
            or (char == ")" and url.count("(", 0, end) < url.count(")", 0, end))
            or (char == "]" and url.count("[", 0, end) < url.count("]", 0, end))
        ):
            end -= 1
        else:
            break
    return url[end:]
