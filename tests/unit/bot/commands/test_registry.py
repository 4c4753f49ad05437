"""The command registry's pure parts: which command a mistyped word resembles, as each platform writes it."""

from __future__ import annotations

import pytest

from bot.commands.builtin import default_registry
from bot.commands.registry import Asker
from bot.types import CommandStyle

SLACK = CommandStyle(prefix="/kb ", bare="kb", attachments=False)


@pytest.mark.parametrize(
    ("word", "asker", "suggestion"),
    [
        ("jbos", Asker(is_admin=True), "/jobs"),
        ("sorces", Asker(is_admin=False), "/sources"),
        ("HLEP", Asker(is_admin=False), "/help"),
        ("jbos", Asker(is_admin=True, style=SLACK), "/kb jobs"),
        ("lsit", Asker(is_admin=False, style=SLACK), "/kb list"),
        ("infos", Asker(is_admin=False, style=SLACK), "/kb info"),
        ("jbos", Asker(is_admin=False, style=SLACK), None),  # /kb jobs is for admins only
        ("frobnicate", Asker(is_admin=True, style=SLACK), None),
        ("vpn", Asker(is_admin=True, style=SLACK), None),
        ("lunch", Asker(is_admin=False, style=SLACK), None),
        ("start", Asker(is_admin=False), None),  # unlisted commands are never suggested
    ],
)
def test_a_mistyped_word_suggests_the_command_it_resembles_among_those_the_person_may_run(
    word: str, asker: Asker, suggestion: str | None
) -> None:
    assert default_registry().suggest(word, asker) == suggestion
