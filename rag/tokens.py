"""Token counting with tiktoken, from a local cache directory where one is configured."""

from __future__ import annotations

import os
from pathlib import Path

import tiktoken


class TokenCounter:
    """Counts and trims text in the tokens of one tiktoken encoding."""

    def __init__(self, encoding: str = "cl100k_base", cache_dir: Path | None = None) -> None:
        if cache_dir is not None:
            # tiktoken reads its cache location only from this variable, at load time;
            # offline machines point it at a folder holding the encoding files.
            os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
        self._encoding = tiktoken.get_encoding(encoding)

    @property
    def encoding(self) -> tiktoken.Encoding:
        """The tiktoken encoding itself (the token splitter needs it)."""
        return self._encoding

    @property
    def name(self) -> str:
        """The encoding's name."""
        return self._encoding.name

    def count(self, text: str) -> int:
        """How many tokens `text` is."""
        return len(self._encoding.encode(text, disallowed_special=()))

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` that fits in `max_tokens` tokens, never ending mid-character."""
        tokens = self._encoding.encode(text, disallowed_special=())
        if len(tokens) <= max_tokens:
            return text
        # A token boundary can fall inside a multi-byte character (common in Chinese); a prefix
        # of valid UTF-8 can only be incomplete at its end, so dropping the broken tail is exact.
        return self._encoding.decode_bytes(tokens[:max_tokens]).decode("utf-8", errors="ignore")
