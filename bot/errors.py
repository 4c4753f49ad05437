"""Errors the bot layer shows to people: startup problems and user-facing failures."""

from __future__ import annotations


class StartupError(Exception):
    """Start-up cannot go on; names the setting to change and how."""

    def __init__(self, setting: str, problem: str, fix: str) -> None:
        super().__init__(f"{setting}: {problem}. Fix: {fix}")
        self.setting = setting
        self.problem = problem
        self.fix = fix


class UserFacingError(Exception):
    """An error whose `user_message` may be shown to the person who caused it."""

    def __init__(self, user_message: str) -> None:
        super().__init__(user_message)
        self.user_message = user_message
