"""`/stats`: what went wrong in this chat lately (questions that found nothing, answers given a 👎), grouped by
meaning, for its admins."""

from __future__ import annotations

from typing import Final

from bot.commands.registry import CommandContext, CommandRegistry, Form
from bot.errors import UserFacingError
from bot.knowledge.misses import MissGroup
from bot.words import messages

_DEFAULT_DAYS: Final = 7
# A year back is as far as a chat report reads: past that, retention has usually removed the conversations.
_MAX_DAYS: Final = 365
# Groups shown of each kind in a chat message: enough to act on, short enough to read on a phone.
_TOP: Final = 5


def register_stats(registry: CommandRegistry) -> None:
    """Register `/stats [DAYS]` (admins only)."""

    @registry.register("stats", admin=True, forms=(Form(), Form("days")))
    async def stats(context: CommandContext) -> None:
        await context.reply(await _report(context))


async def _report(context: CommandContext) -> str:
    days = _days(context)
    reports = context.parts.misses
    if reports is None:
        return messages.stats_unavailable(context.lang)
    report = await reports.of_chat(context.message.key, days, top=_TOP)
    misses = report.misses
    groups = (
        ("unanswered", misses.unanswered_total, [_row(group, context.lang) for group in misses.unanswered]),
        ("disliked", misses.disliked_total, [_row(group, context.lang) for group in misses.disliked]),
    )
    return messages.stats_report(days, (report.questions, report.helpful, report.unhelpful), groups, context.lang)


def _days(context: CommandContext) -> int:
    args = context.command.args
    if not args:
        return _DEFAULT_DAYS
    if len(args) == 1 and args[0].isdigit() and 1 <= int(args[0]) <= _MAX_DAYS:
        return int(args[0])
    raise UserFacingError(messages.stats_bad_days(_MAX_DAYS, context.lang, context.style))


def _row(group: MissGroup, lang: str) -> tuple[int, str, str]:
    """A group as the report lists it: count, example, and the reasons given as the person reads them."""
    why = ", ".join(f"{messages.feedback_reason(name, lang)} {n}" for name, n in group.reasons)
    return group.count, group.example, why
