"""The message catalogues, one per language the bot speaks (bot/words/locales/<code>.toml and each platform's own
locales), loaded once."""

from __future__ import annotations

import functools
import string
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.metadata import entry_points
from typing import Any, Final

DEFAULT_LANGUAGE: Final = "en"


@dataclass(frozen=True, slots=True)
class Catalogue:
    """One language's fixed messages by id (`turn.failed`), each a str.format template, and the language's name."""

    language: str
    name: str
    entries: Mapping[str, str]

    def text(self, message_id: str, /, **values: object) -> str:
        """The message `message_id` with `values` filled in; the default language's when this catalogue lacks it."""
        template = self.entries.get(message_id)
        if template is None:
            # A KeyError here is a bug (an id no catalogue has); a test checks every id the code uses.
            template = catalogue(DEFAULT_LANGUAGE).entries[message_id]
        return template.format(**values)

    def get(self, message_id: str, /, **values: object) -> str | None:
        """Like `text`, but None when no catalogue has `message_id` (ids built from data, like a job's stage)."""
        if message_id not in self.entries and message_id not in catalogue(DEFAULT_LANGUAGE).entries:
            return None
        return self.text(message_id, **values)

    def plural(self, message_id: str, count: int, /, **values: object) -> str:
        """The `.one` or `.other` form of `message_id` for `count` (filled in as {count})."""
        return self.text(f"{message_id}.{'one' if count == 1 else 'other'}", count=count, **values)


def languages() -> tuple[str, ...]:
    """The codes of the languages with a catalogue, sorted."""
    return _languages()


@functools.cache
def _languages() -> tuple[str, ...]:
    folder = resources.files("bot.words").joinpath("locales")
    return tuple(sorted(item.name.removesuffix(".toml") for item in folder.iterdir() if item.name.endswith(".toml")))


PLATFORM_LOCALES: Final = "ragbot.locales"


@functools.cache
def catalogue(language: str) -> Catalogue:
    """The catalogue of `language` (loaded once); the default language's for a code without one.

    ragbot's own texts, and each chat platform's (its package's locales/<code>.toml, registered in the
    `ragbot.locales` entry points), which may not reuse an id of ragbot's or of another platform.
    """
    if language not in languages():
        language = DEFAULT_LANGUAGE
    data = _read("bot.words", language)
    meta = data.pop("meta", {})
    entries = dict(_flatten(data))
    for package in _platform_packages():
        if not resources.files(package).joinpath("locales", f"{language}.toml").is_file():
            continue
        for message_id, template in _flatten(_read(package, language)):
            if message_id in entries:
                raise ValueError(f"{package} locales/{language}.toml: {message_id} is already ragbot's or a platform's")
            entries[message_id] = template
    return Catalogue(language, str(meta.get("name", language)), entries)


@functools.cache
def _platform_packages() -> tuple[str, ...]:
    return tuple(entry.value for entry in sorted(entry_points(group=PLATFORM_LOCALES), key=lambda e: e.name))


def _read(package: str, language: str) -> dict[str, Any]:
    text = resources.files(package).joinpath("locales", f"{language}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def _flatten(table: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    entries: list[tuple[str, str]] = []
    for key, value in table.items():
        if isinstance(value, Mapping):
            entries += _flatten(value, f"{prefix}{key}.")
        else:
            entries.append((f"{prefix}{key}", str(value)))
    return entries


def placeholders(template: str) -> frozenset[str]:
    """The names of a template's {placeholders}."""
    return frozenset(name for _text, name, _spec, _conv in string.Formatter().parse(template) if name)
