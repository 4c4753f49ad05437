"""The REWRITE_QUERY stage: the question rewritten so that it stands on its own."""

from __future__ import annotations

from rag.pipeline import TurnContext
from rag.rewrite import Rewriter


class RewriteQuery:
    """Reads query, history; writes rewritten (the raw query when nothing needs resolving)."""

    name = "REWRITE_QUERY"

    def __init__(self, rewriter: Rewriter | None) -> None:
        self._rewriter = rewriter

    async def run(self, turn: TurnContext) -> str:
        if self._rewriter is None:
            return "skipped=disabled"
        if not turn.history:
            return "skipped=no_history"
        result = await self._rewriter.rewrite(turn.query, turn.history)
        turn.rewritten = result.text
        return f"method={result.method}"
