"""Tenants: who owns a knowledge base, and which tenant a chat belongs to.

The operator (tenant '') runs ragbot: the terminal, the web chat, Telegram and a Slack app installed in one workspace
with its token are the operator's own chats. A platform whose workspaces install the app themselves (Slack through
OAuth) makes each workspace a tenant of its own ("slack:T123"): it reads only the knowledge bases it owns or the
operator granted it, and never learns another's names.
"""

from __future__ import annotations

import re
from typing import Final

from bot.errors import UserFacingError

OPERATOR: Final = ""
_TENANT = re.compile(r"(?P<platform>[a-z][a-z0-9_]{0,31}):(?P<workspace>[A-Za-z0-9_.:\-]{1,96})")


def tenant_of(platform: str, workspace: str, separate: frozenset[str]) -> str:
    """The tenant of a chat: its workspace's on a platform in `separate`, else the operator.

    An Enterprise Grid workspace ("E1/T1") is written "slack:E1:T1": the slash is what qualifies a name."""
    return f"{platform}:{workspace.replace('/', ':')}" if platform in separate and workspace else OPERATOR


def parse_tenant(text: str) -> str:
    """A tenant as an operator types it ("slack:T012AB", or "operator"); raises UserFacingError otherwise."""
    text = text.strip()
    if text in ("operator", OPERATOR):
        return OPERATOR
    if not _TENANT.fullmatch(text):
        raise UserFacingError(f"{text!r} is not a tenant: write it as platform:workspace, e.g. slack:T012AB3CD.")
    return text


def split_qualified(name: str) -> tuple[str, str]:
    """(owner, name) of a name the terminal may qualify with its owner ("slack:T012AB/handbook")."""
    owner, slash, rest = name.partition("/")
    if slash and rest and _TENANT.fullmatch(owner):
        return owner, rest
    return OPERATOR, name


def is_qualified(name: str) -> bool:
    """Whether a name reads as owner-qualified (so no knowledge base may be called that)."""
    return split_qualified(name)[0] != OPERATOR


def shown(owner: str) -> str:
    """An owner as the terminal shows it."""
    return owner or "operator"
