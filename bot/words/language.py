"""The language of one turn: the chat's override (`/lang`) when it has a catalogue, else the message's own."""

from __future__ import annotations

from bot.words.catalogue import languages
from rag.language import language_of


def detect(text: str) -> str:
    """The language of a message as detection sees it: zh when a third of its letters are Chinese, else en."""
    return language_of(text)


def turn_language(text: str, override: str = "", app_language: str = "") -> str:
    """The language to reply in: the chat's override when it has a catalogue, else the language of `text`.

    Text without a letter to tell by (`/start`, a bare command) is in the language the person's app is set to
    (`app_language`, an IETF tag like "zh-hans") when that has a catalogue. Detection tells only Chinese from
    English; a language with a catalogue but no detection (another file in bot/words/locales) is reached through
    the override.
    """
    if override in languages():
        return override
    primary = app_language.split("-")[0].lower()
    if primary in languages() and not any(char.isalpha() for char in text):
        return primary
    return detect(text)
