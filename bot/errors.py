"""Errors the bot layer shows to people or gets from platforms: startup problems, user-facing failures, delivery."""

from __future__ import annotations

from collections.abc import Callable


class StartupError(Exception):
    """Start-up cannot go on; names the setting to change and how."""

    def __init__(self, setting: str, problem: str, fix: str) -> None:
        super().__init__(f"{setting}: {problem}. Fix: {fix}")
        self.setting = setting
        self.problem = problem
        self.fix = fix


class UserFacingError(Exception):
    """An error whose `user_message` may be shown to the person who caused it.

    A layer that knows no chat's language (an adapter reading a file) gives `in_language`, the message in any
    language the turn boundary asks for; `user_message` is then its English.
    """

    def __init__(self, user_message: str, *, in_language: Callable[[str], str] | None = None) -> None:
        super().__init__(user_message)
        self.user_message = user_message
        self._in_language = in_language

    def message_in(self, lang: str) -> str:
        """The message in `lang` where the raiser said how, else as raised."""
        return self._in_language(lang) if self._in_language is not None else self.user_message


class InvalidKnowledgeBaseName(UserFacingError):
    """A knowledge-base name that is empty, longer than `max_length` or more than one line."""

    def __init__(self, user_message: str, max_length: int) -> None:
        super().__init__(user_message)
        self.max_length = max_length


class KnowledgeBaseExists(UserFacingError):
    """A knowledge base of that name exists already."""

    def __init__(self, name: str) -> None:
        super().__init__(f"A knowledge base named {name!r} already exists.")
        self.name = name


class PlatformError(Exception):
    """A chat platform refused or failed a call; adapters translate their SDK's errors into this family."""


class PlatformRateLimited(PlatformError):
    """The platform said "too many requests"; try again after `retry_after` seconds.

    `local` marks a call held back by the adapter's own budget before the platform was asked (not a 429).
    """

    def __init__(self, retry_after: float, detail: str = "", *, local: bool = False) -> None:
        super().__init__(f"rate limited for {retry_after:g} s {detail}".strip())
        self.retry_after = retry_after
        self.local = local


class PlatformUnavailable(PlatformError):
    """The platform failed the call on its side (a 5xx) or could not be reached (network, timeout)."""


class MarkupRejected(PlatformError):
    """The platform could not parse the message's markup; the same text sent plain will go through."""


class MessageGone(PlatformError):
    """The message to edit no longer exists (deleted by a person); a new one must be sent instead."""


class DeliveryFailed(PlatformError):
    """The chat cannot be written to at all (bot removed, chat deleted, token revoked): give up on it."""
