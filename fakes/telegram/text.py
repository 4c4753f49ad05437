"""Message text as Telegram reads it: UTF-16 lengths, the HTML parse mode (tdlib's parse_html), trimming, entities."""

from __future__ import annotations

import re
from dataclasses import dataclass

from fakes.base import Json
from fakes.telegram.wire import ApiError

# Bot API limit (PTB constants.MessageLimit.MAX_TEXT_LENGTH).
MAX_TEXT_UTF16 = 4096

_INCOMING_ENTITIES = re.compile(
    r"(?P<bot_command>(?<!\S)/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{3,32})?)|(?P<mention>(?<![\w@])@[A-Za-z0-9_]{5,32})"
)


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit of Telegram's text limits and entity offsets."""
    return len(text.encode("utf-16-le")) // 2


class HtmlParseError(ValueError):
    """Text that Telegram's HTML parse mode rejects; str() is the detail after "can't parse entities: "."""


_HTML_ENTITY_TYPES = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
    "code": "code",
    "pre": "pre",
    "a": "text_link",
    "blockquote": "blockquote",
    "tg-emoji": "custom_emoji",
}

_NAMED_CHARACTERS = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}


@dataclass(slots=True)
class _OpenTag:
    name: str
    offset: int
    attributes: dict[str, str]
    language: str | None = None


def _decode_character(source: str, at: int) -> tuple[str, int] | None:
    """The character an `&...;` reference at `at` stands for and where it ends; None leaves the `&` literal."""
    match = re.match(r"&(?:#x([0-9a-fA-F]{1,8})|#([0-9]{1,8})|([A-Za-z]+));?", source[at:])
    if match is None:
        return None
    hexa, decimal, name = match.groups()
    if name is not None:
        char = _NAMED_CHARACTERS.get(name)  # Telegram knows only these four names; others stay as written
        return (char, at + match.end()) if char is not None else None
    code = int(hexa, 16) if hexa is not None else int(decimal)
    if code == 0 or code >= 0x10FFFF:
        return None
    return chr(code), at + match.end()


def parse_html(source: str) -> tuple[str, list[Json]]:
    """Telegram's HTML parse mode (tdlib parse_html): the plain text and its entities, or HtmlParseError.

    Error texts follow tdlib's: unsupported and unclosed tags, unexpected or mismatched end tags, and tags left open.
    """
    text: list[str] = []
    offset = 0  # in UTF-16 units, like every entity offset
    entities: list[Json] = []
    stack: list[_OpenTag] = []
    index, size = 0, len(source)

    def byte_offset(at: int) -> int:
        return len(source[:at].encode())

    while index < size:
        char = source[index]
        if char == "&" and (decoded := _decode_character(source, index)) is not None:
            text.append(decoded[0])
            offset += utf16_len(decoded[0])
            index = decoded[1]
            continue
        if char != "<":
            text.append(char)
            offset += utf16_len(char)
            index += 1
            continue
        begin = index
        if source.startswith("</", index):
            end = index + 2
            while end < size and not source[end].isspace() and source[end] != ">":
                end += 1
            name = source[index + 2 : end].lower()
            while end < size and source[end].isspace():
                end += 1
            if end >= size or source[end] != ">":
                raise HtmlParseError(f"Unclosed end tag at byte offset {byte_offset(begin)}")
            if not stack:
                raise HtmlParseError(f"Unexpected end tag at byte offset {byte_offset(begin)}")
            tag = stack.pop()
            if name and name != tag.name:
                raise HtmlParseError(
                    f"Unmatched end tag at byte offset {byte_offset(begin)},"
                    f' expected "</{tag.name}>", found "</{name}>"'
                )
            if tag.name == "code" and stack and stack[-1].name == "pre" and tag.language:
                stack[-1].language = tag.language  # <pre><code class="language-x"> is one pre entity with a language
            elif offset > tag.offset:
                entities.append(_html_entity(tag, offset))
            index = end + 1
            continue
        end = index + 1
        while end < size and not source[end].isspace() and source[end] != ">":
            end += 1
        if end >= size:
            raise HtmlParseError(f"Unclosed start tag at byte offset {byte_offset(begin)}")
        name = source[index + 1 : end].lower()
        if name not in _HTML_ENTITY_TYPES:
            raise HtmlParseError(f'Unsupported start tag "{name}" at byte offset {byte_offset(begin)}')
        attributes, index = _html_attributes(source, end, name, byte_offset(begin))
        if name == "span" and attributes.get("class") != "tg-spoiler":
            raise HtmlParseError(f'Tag "span" must have class "tg-spoiler" at byte offset {byte_offset(begin)}')
        language = attributes.get("class", "")
        stack.append(_OpenTag(name, offset, attributes, language.removeprefix("language-") if name == "code" else None))
    if stack:
        raise HtmlParseError(f'Can\'t find end tag corresponding to start tag "{stack[-1].name}"')
    entities.sort(key=lambda entity: (entity["offset"], -entity["length"]))
    return "".join(text), entities


def _html_attributes(source: str, index: int, tag: str, begin: int) -> tuple[dict[str, str], int]:
    """The attributes of the start tag whose name ends at `index`, and the position after its `>`."""
    attributes: dict[str, str] = {}
    size = len(source)
    while True:
        while index < size and source[index].isspace():
            index += 1
        if index >= size:
            raise HtmlParseError(f"Unclosed start tag at byte offset {begin}")
        if source[index] == ">":
            return attributes, index + 1
        start = index
        while index < size and not source[index].isspace() and source[index] not in "=>":
            index += 1
        name = source[start:index].lower()
        while index < size and source[index].isspace():
            index += 1
        if index >= size or source[index] != "=":
            if tag == "blockquote" and name == "expandable":
                attributes[name] = ""
                continue
            raise HtmlParseError(
                f'Expected equal sign in declaration of an attribute of the tag "{tag}" at byte offset {begin}'
            )
        index += 1
        while index < size and source[index].isspace():
            index += 1
        if index >= size:
            raise HtmlParseError(f"Unclosed start tag at byte offset {begin}")
        if source[index] in "\"'":
            quote = source[index]
            close = source.find(quote, index + 1)
            if close < 0:
                raise HtmlParseError(f"Unclosed start tag at byte offset {begin}")
            value = re.sub(r"&(lt|gt|amp|quot);", lambda m: _NAMED_CHARACTERS[m[1]], source[index + 1 : close])
            index = close + 1
        else:
            match = re.match(r"[A-Za-z0-9.-]*", source[index:])
            value = match[0].lower() if match else ""
            index += len(value)
        attributes[name] = value


def _html_entity(tag: _OpenTag, end: int) -> Json:
    entity: Json = {"type": _HTML_ENTITY_TYPES[tag.name], "offset": tag.offset, "length": end - tag.offset}
    if tag.name == "a":
        entity["url"] = tag.attributes.get("href", "")
    elif tag.name == "pre" and tag.language:
        entity["language"] = tag.language
    elif tag.name == "tg-emoji":
        entity["custom_emoji_id"] = tag.attributes.get("emoji-id", "")
    elif tag.name == "blockquote" and "expandable" in tag.attributes:
        entity["type"] = "expandable_blockquote"
    return entity


def _strip(text: str, entities: list[Json]) -> tuple[str, list[Json]]:
    """Telegram trims surrounding whitespace from message text; entities move and shrink with it."""
    stripped = text.strip()
    lead = utf16_len(text[: len(text) - len(text.lstrip())])
    length = utf16_len(stripped)
    kept = []
    for entity in entities:
        start = max(entity["offset"] - lead, 0)
        end = min(entity["offset"] + entity["length"] - lead, length)
        if end > start:
            kept.append({**entity, "offset": start, "length": end - start})
    return stripped, kept


def incoming_entities(text: str) -> list[Json]:
    """The bot_command and mention entities Telegram attaches to a user's message."""
    return [
        {"type": match.lastgroup, "offset": utf16_len(text[: match.start()]), "length": utf16_len(match[0])}
        for match in _INCOMING_ENTITIES.finditer(text)
    ]


def message_text(params: Json, name: str, *, allow_empty: bool = False) -> tuple[str, list[Json]]:
    """The text as users will see it and its entities, after parse_mode, trimming and the length check."""
    raw = str(params.get(name) or "")
    parse_mode = str(params.get("parse_mode") or "")
    entities = params.get("entities") or []
    if parse_mode.upper() == "HTML":
        try:
            raw, entities = parse_html(raw)
        except HtmlParseError as exc:
            raise ApiError(400, f"Bad Request: can't parse entities: {exc}") from exc
    text, entities = _strip(raw, entities)
    if not text and not allow_empty:
        raise ApiError(400, "Bad Request: message text is empty")
    if utf16_len(text) > MAX_TEXT_UTF16:
        raise ApiError(400, "Bad Request: message is too long")
    return text, entities
