"""Incremental filter over a model's streamed answer: drops <think> blocks and spots a leading NO_MATCH."""

from __future__ import annotations

from typing import Final

NO_MATCH: Final = "NO_MATCH"
"""The marker the default prompt asks the model to start with when the sources do not hold the answer."""

# Reasoning models (DeepSeek-R1, Qwen3, QwQ) wrap their reasoning in one of these pairs. Matching is
# ASCII-case-insensitive: ASCII-only folding keeps every string the same length, so positions found in the
# folded copy are positions in the original (str.lower() can lengthen a string: "İ" -> "i̇").
_TAGS: Final = {"<think>": "</think>", "<thinking>": "</thinking>"}
_LONGEST_PARTIAL: Final = max(len(tag) for pair in _TAGS.items() for tag in pair) - 1
_ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _fold(text: str) -> str:
    return text.translate(_ASCII_LOWER)


def _partial_start(folded: str, tags: tuple[str, ...]) -> int:
    """Where the longest suffix of `folded` that could still grow into one of `tags` begins (len if none)."""
    for start in range(max(0, len(folded) - _LONGEST_PARTIAL), len(folded)):
        tail = folded[start:]
        if any(tag.startswith(tail) for tag in tags):
            return start
    return len(folded)


class StreamFilter:
    """Turns streamed model deltas into the text a person may see, one delta at a time.

    - `<think>…</think>` and `<thinking>…</thinking>` blocks are removed wherever they occur, even when a
      tag is split across deltas; a block still open when the stream ends is dropped with its content.
    - Whitespace before the visible answer (including the gap after a leading think block) is dropped.
    - An answer whose visible text starts with NO_MATCH sets `no_match`; from then on nothing is emitted.
      A NO_MATCH later in the answer is ordinary text.

    Text is held back only while it could still be a tag (at most 9 characters, "<thinking" without ">")
    or, before the answer's first visible characters are settled, a NO_MATCH prefix (at most 7 more).
    The output never depends on how the stream was split into deltas.
    """

    __slots__ = ("_close", "_finished", "_head", "_no_match", "_pending", "_started")

    def __init__(self) -> None:
        self._pending = ""  # raw text not yet classified as visible or reasoning
        self._close: str | None = None  # the closing tag awaited while inside a think block
        self._head = ""  # visible text held while it could still be the start of NO_MATCH
        self._started = False  # the answer's opening is settled: no NO_MATCH, text flows
        self._no_match = False
        self._finished = False

    @property
    def no_match(self) -> bool:
        """The visible answer began with NO_MATCH (the model found no answer in the sources)."""
        return self._no_match

    def feed(self, delta: str) -> str:
        """Takes the next delta; returns the text that may be shown now (often "", never held-back text)."""
        if self._finished:
            raise RuntimeError("StreamFilter.feed() after finish()")
        if self._no_match:
            return ""
        self._pending += delta
        return self._drain(final=False)

    def finish(self) -> str:
        """Ends the stream; returns what was held back and is now known to be visible."""
        if self._finished:
            return ""
        self._finished = True
        if self._no_match:
            return ""
        shown = self._drain(final=True)
        if self._no_match or self._started:
            return shown
        # The stream ended inside a possible NO_MATCH prefix ("NO_MA"): it was only text after all.
        head, self._head = self._head, ""
        return shown + head

    def _drain(self, *, final: bool) -> str:
        """Classifies as much of the pending text as is settled; at the end of the stream, all of it."""
        if self._close is None and "<" not in self._pending:
            # No tag starts without "<": all of it is settled (most deltas of most answers).
            pending, self._pending = self._pending, ""
            return self._visible(pending)
        shown: list[str] = []
        while self._pending and not self._no_match:
            folded = _fold(self._pending)
            if self._close is not None:
                end = folded.find(self._close)
                if end < 0:
                    # Reasoning is discarded; only a possible start of the closing tag is kept.
                    keep = len(folded) if final else _partial_start(folded, (self._close,))
                    self._pending = self._pending[keep:]
                    break
                self._pending = self._pending[end + len(self._close) :]
                self._close = None
                continue
            found = [(at, tag) for tag in _TAGS if (at := folded.find(tag)) >= 0]
            if found:
                at, tag = min(found)
                shown.append(self._visible(self._pending[:at]))
                self._pending = self._pending[at + len(tag) :]
                self._close = _TAGS[tag]
                continue
            cut = len(folded) if final else _partial_start(folded, tuple(_TAGS))
            shown.append(self._visible(self._pending[:cut]))
            self._pending = self._pending[cut:]
            break
        if self._no_match:
            self._pending = ""
        return "".join(shown)

    def _visible(self, text: str) -> str:
        """Passes visible text on, once the start of the answer is known not to be NO_MATCH."""
        if self._started or self._no_match:
            return "" if self._no_match else text
        self._head = (self._head + text).lstrip()
        if self._head.startswith(NO_MATCH):
            self._no_match = True
            self._head = ""
            return ""
        if NO_MATCH.startswith(self._head):
            return ""  # empty, or still a possible prefix of the marker: wait for more
        self._started = True
        head, self._head = self._head, ""
        return head
