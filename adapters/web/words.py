"""What the web page says itself, in the chat's language (texts: adapters/web/locales/<code>.toml)."""

from __future__ import annotations

from bot.words.catalogue import catalogue

_PREFIX = "web."
# The core's words the page shows too, under their own ids: the reasons for a 👎 and the menu asking for one, and a
# source's page.
_SHARED = ("feedback.", "turn.source_page")


def page_texts(lang: str) -> dict[str, str]:
    """Every text of the page in `lang`, by its key on the page (`send`, `busy`, ...), its {placeholders} left for
    the page to fill."""
    english, words = catalogue("en").entries, catalogue(lang).entries
    texts = {
        message_id.removeprefix(_PREFIX): words.get(message_id, template)
        for message_id, template in english.items()
        if message_id.startswith(_PREFIX)
    }
    texts.update(
        (message_id, words.get(message_id, template))
        for message_id, template in english.items()
        if message_id.startswith(_SHARED)
    )
    return texts
