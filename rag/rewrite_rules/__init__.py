"""RuleRewriter: query rewriting without a model (references, ellipsis, left-out arguments), fast and conservative."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from rag.rewrite import RewriteResult, Round
from rag.rewrite_rules.chinese import CJK, ChineseRules
from rag.rewrite_rules.ellipsis import complete_ellipsis, is_remnant
from rag.rewrite_rules.english import rewrite_english

__all__ = ["RuleRewriter"]

# A follow-up that leans on the conversation is short; a question this long stands alone.
_MAX_QUERY_CHARS = 500


class RuleRewriter:
    """Fills in what a follow-up leaves to the conversation, in English or Chinese; unchanged when unsure."""

    def __init__(self) -> None:
        self._chinese = ChineseRules()

    async def rewrite(self, query: str, history: Sequence[Round]) -> RewriteResult:
        """The query with its references filled in (method `rules`), or unchanged (method `none`) with the reason."""
        if not history:
            return RewriteResult(query, "none", "no history")
        if len(query) > _MAX_QUERY_CHARS:
            return RewriteResult(query, "none", "too long for a follow-up")  # and the rules' work grows with it
        if CJK.search(query):
            if not self._chinese.ready:
                await asyncio.to_thread(self._chinese.load)
            done = self._chinese.rewrite(query, history)
        elif len(query.split()) < 2:
            return RewriteResult(query, "none", "one word")  # no clause to fill in
        else:
            done = self._english(query, history)
        if done is None:
            return RewriteResult(query, "none", "no reference resolved")
        return RewriteResult(done[0], "rules", done[1])

    def _english(self, query: str, history: Sequence[Round]) -> tuple[str, str] | None:
        if is_remnant(query):
            previous = history[-1][0]
            resolved = rewrite_english(previous, history[:-1])  # "And Telegram?" after "Does it support Slack?"
            done = complete_ellipsis(query, resolved[0] if resolved else previous)
            if done is not None:
                return done
        return rewrite_english(query, history)
