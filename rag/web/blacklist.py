"""The web search blacklist as in WeKnora: `/regex/` rules, and wildcard rules matched over the whole URL."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass


class BlacklistError(ValueError):
    """A rule that cannot be read; names its line (1-based) so the admin finds it."""

    def __init__(self, line: int, rule: str, why: str) -> None:
        super().__init__(f"line {line} ({rule!r}): {why}")
        self.line = line
        self.rule = rule


@dataclass(frozen=True, slots=True)
class Blacklist:
    """URLs web search must never show or fetch."""

    patterns: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def parse(cls, text: str) -> Blacklist:
        """Rules one a line (blank lines and `#` comments skipped); an invalid rule raises BlacklistError.

        A rule between slashes is a regular expression searched anywhere in the URL (`/example\\.(net|org)/`);
        anything else is a shell-style wildcard over the whole URL (`*://*.example.com/*`), case-insensitive.
        Lines only: a comma may belong to a regex (`{1,3}`), so it does not separate rules.
        """
        return cls(tuple(_rule(number, line.strip()) for number, line in _lines(text)))

    def blocks(self, url: str) -> bool:
        """Whether any rule matches `url`."""
        return any(pattern.search(url) for pattern in self.patterns)


def _lines(text: str) -> Sequence[tuple[int, str]]:
    return [
        (number, line)
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.strip().startswith("#")
    ]


def _rule(number: int, rule: str) -> re.Pattern[str]:
    if len(rule) >= 2 and rule.startswith("/") and rule.endswith("/"):
        body = rule[1:-1]
        if not body:
            raise BlacklistError(number, rule, "an empty regular expression would block every URL")
        try:
            return re.compile(body, re.IGNORECASE)
        except re.error as exc:
            raise BlacklistError(number, rule, f"not a valid regular expression ({exc})") from exc
    if rule.startswith("/"):
        raise BlacklistError(number, rule, "a regular expression must end with '/' as it starts with one")
    if _open_bracket(rule):
        raise BlacklistError(number, rule, "an unclosed '[' in a wildcard pattern")
    # fnmatch.translate anchors at the end only; fullmatch-by-search needs the start anchored too.
    return re.compile(r"\A" + fnmatch.translate(rule), re.IGNORECASE)


def _open_bracket(rule: str) -> bool:
    """A '[' with no ']' after it: fnmatch would quietly read it as a literal '[', which the writer did not mean."""
    start = rule.rfind("[")
    return start != -1 and "]" not in rule[start + 1 :]
