"""The language of one turn: the chat's override (`/lang`) when it has a catalogue, else the message's own."""

from __future__ import annotations

from bot.words.catalogue import languages
from rag.language import language_of


def detect(text: str) -> str:
    """The language of a message as detection sees it: zh when a third of its letters are Chinese, else en."""
    return language_of(text)


def turn_language(text: str, override: str = "") -> str:
    """The language to reply in: the chat's override when it has a catalogue, else the language of `text`.

    Detection tells only Chinese from English; a language with a catalogue but no detection (another file in
    bot/words/locales) is reached through the override.
    """
    return override if override in languages() else detect(text)
