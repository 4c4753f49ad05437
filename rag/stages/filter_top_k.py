"""The FILTER_TOP_K stage: the best passages that go on to the prompt."""

from __future__ import annotations

from rag.pipeline import TurnContext


class FilterTopK:
    """Reads merged, else reranked, else candidates (unless a reranker judged them all irrelevant); writes selected."""

    name = "FILTER_TOP_K"

    def __init__(self, top_k: int) -> None:
        self._top_k = top_k

    async def run(self, turn: TurnContext) -> str:
        pool = turn.merged or turn.ranked
        turn.selected = list(pool[: self._top_k])
        return "none_relevant" if turn.judged and not pool else ""
