"""Which language a text is in, as ragbot tells them apart: Chinese when a third of its letters are Han, else English.

One rule for everything that depends on it: the fusion weights of a search, whether the embedding model's vectors
count, and the language the bot replies in. A Chinese question naming an English product ("《real world》什么时候
发行的？") has fewer Han letters than Latin ones and is still Chinese; a third catches it where half did not.
"""

from __future__ import annotations

import unicodedata
from typing import Literal, get_args

Language = Literal["zh", "en"]
LANGUAGES: tuple[Language, ...] = get_args(Language)


def language_of(text: str) -> Language:
    """zh when at least a third of the letters are CJK ideographs (with extension A), else en."""
    letters = [char for char in text if unicodedata.category(char).startswith("L")]
    if not letters:
        return "en"
    han = sum(1 for char in letters if "\u4e00" <= char <= "\u9fff" or "\u3400" <= char <= "\u4dbf")
    return "zh" if han * 3 >= len(letters) else "en"
