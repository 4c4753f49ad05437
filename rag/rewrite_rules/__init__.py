"""RuleRewriter: query rewriting without a model (pronoun resolution, short Chinese ellipsis), fast and conservative."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from rag.rewrite import RewriteResult, Round
from rag.rewrite_rules.chinese import CJK, ChineseRules
from rag.rewrite_rules.english import rewrite_english

__all__ = ["RuleRewriter"]


class RuleRewriter:
    """Resolves pronouns from the history and completes short Chinese "X呢" follow-ups; unchanged when unsure."""

    def __init__(self) -> None:
        self._chinese = ChineseRules()

    async def rewrite(self, query: str, history: Sequence[Round]) -> RewriteResult:
        """The query with its references filled in (method `rules`), or unchanged (method `none`) with the reason."""
        if not history:
            return RewriteResult(query, "none", "no history")
        if CJK.search(query):
            if not self._chinese.ready:
                await asyncio.to_thread(self._chinese.load)
            done = self._chinese.rewrite(query, history)
        else:
            done = rewrite_english(query, history)
        if done is None:
            return RewriteResult(query, "none", "no reference resolved")
        return RewriteResult(done[0], "rules", done[1])
