"""Why an answer got a 👎: the reasons a person may pick, and what became of one they gave."""

from __future__ import annotations

from typing import Final, Literal

from bot.chat.parts import Conversations
from storage.errors import NotFound, ReasonRefused

REASONS: Final = ("wrong", "outdated", "not_found", "too_long", "other")
# The longest note kept with a reason: a sentence or two (Slack's modal caps its input at the same length).
NOTE_MAX: Final = 500

ReasonResult = Literal["saved", "gone", "not_down", "not_rater", "too_long", "unknown"]
"""What became of a reason: stored, or why not (no such answer, no 👎 on it, someone else's 👎, note too long,
a reason not among REASONS)."""


async def give_reason(
    conversations: Conversations, conversation_id: str, message_id: str, reason: str, note: str, *, by: str
) -> ReasonResult:
    """Store `reason` (one of REASONS) and `note` for the 👎 that `by` gave an answer of the conversation."""
    if reason not in REASONS:
        return "unknown"
    note = note.strip()
    if len(note) > NOTE_MAX:
        return "too_long"
    try:
        await conversations.set_feedback_reason(message_id, reason, note, conversation_id=conversation_id, by=by)
    except NotFound:
        return "gone"
    except ReasonRefused as exc:
        return "not_rater" if exc.why == "not_rater" else "not_down"
    return "saved"
