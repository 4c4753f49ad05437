"""The MERGE stage: children folded into parents, adjacent chunks joined, short passages widened."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag.merge import (
    MergeConfig,
    MergeSource,
    TextWindow,
    adjacent_runs,
    by_score,
    covering_text,
    fill_faq,
    group_by_parent,
    join_run,
    run_span,
    run_text,
    widen_short,
)
from rag.pipeline import TurnContext
from rag.types import Candidate
from storage.records import MergeReads, TextSpan


class Merge:
    """Reads reranked or candidates; writes merged.

    Storage is read once per turn: the parents, the joined runs' text and the short passages' widening windows
    (neighbouring chunks and text) together. Only a parent that turns out short needs a second read for its window,
    since its offsets are known only once it is read.
    """

    name = "MERGE"

    def __init__(self, source: MergeSource, config: MergeConfig | None = None) -> None:
        self._source = source
        self._config = config or MergeConfig()

    async def run(self, turn: TurnContext) -> str:
        # Not `reranked or candidates`: once a reranker judged every candidate irrelevant, none may come back here.
        pool = turn.ranked
        faqs = [fill_faq(candidate) for candidate in pool if candidate.kind == "faq"]
        children = [c for c in pool if c.kind == "chunk" and c.segment_id is not None]
        loose = [c for c in pool if c.kind == "chunk" and c.segment_id is None]
        runs = adjacent_runs(loose)
        segment_ids = list(dict.fromkeys(str(child.segment_id) for child in children))
        spans = list(dict.fromkeys(span for run in runs if (span := self._run_read(run)) is not None))
        reads = await self._source.merge_reads(segment_ids, spans) if segment_ids or spans else MergeReads()
        parents = group_by_parent(children, {segment.segment_id: segment for segment in reads.segments})
        joined = self._joined(runs, reads.texts)
        passages = await self._widened([*parents, *joined], reads)
        # On equal scores a curated FAQ answer goes before a passage, as the prompt's FAQ priority would put it.
        turn.merged = by_score([*faqs, *passages])
        widened = sum(1 for passage in passages if "neighbour_ids" in passage.metadata)
        return f"children={len(children)}->{len(parents)} chunks={len(loose)}->{len(joined)} widened={widened}"

    def _run_read(self, run: Sequence[Candidate]) -> TextSpan | None:
        """What to read for a run of loose chunks: its widening window when it will be short, else its own span
        when it has to be joined, else nothing."""
        if run[0].document_id is None:
            return None
        length = len(run[0].text) if len(run) == 1 else run_span(run).end - run_span(run).start
        if length < self._config.short_chars:
            start, end = (run[0].start, run[0].end) if len(run) == 1 else (run_span(run).start, run_span(run).end)
            return self._window(str(run[0].document_id), start, end, length)
        # A run whose chunks leave no gap is joined from their own texts: nothing to read.
        return run_span(run) if len(run) > 1 and run_text(run) is None else None

    def _joined(self, runs: Sequence[Sequence[Candidate]], texts: Mapping[TextSpan, str]) -> list[Candidate]:
        joined: list[Candidate] = []
        for run in runs:
            text = run[0].text if len(run) == 1 else run_text(run) or covering_text(run_span(run), texts)
            if text is None:
                # The document went away since the search: its chunks still stand on their own.
                joined.extend(join_run([chunk], chunk.text) for chunk in run)
            else:
                joined.append(join_run(run, text))
        return joined

    async def _widened(self, passages: Sequence[Candidate], reads: MergeReads) -> list[Candidate]:
        windows = {
            index: self._window_span(passage, str(passage.document_id))
            for index, passage in enumerate(passages)
            if passage.document_id is not None and len(passage.text) < self._config.short_chars
        }
        if not windows:
            return list(passages)
        texts, neighbours = dict(reads.texts), list(reads.chunks)
        unread = [span for span in dict.fromkeys(windows.values()) if span not in texts]
        if unread:
            more = await self._source.merge_reads([], unread)
            texts.update(more.texts)
            neighbours.extend(more.chunks)
        result = list(passages)
        # The best passage widens first, so it gets the context a weaker neighbour might also want.
        for index in sorted(windows, key=lambda i: -passages[i].score):
            span = windows[index]
            if span not in texts:
                continue
            taken = [
                (other.start, other.end)
                for other_index, other in enumerate(result)
                if other_index != index and other.document_id == span.document_id
            ]
            window = TextWindow(span.document_id, span.start, texts[span])
            result[index] = widen_short(result[index], neighbours, window, taken, self._config)
        return result

    def _window_span(self, passage: Candidate, document_id: str) -> TextSpan:
        return self._window(document_id, passage.start, passage.end, len(passage.text))

    def _window(self, document_id: str, start: int, end: int, length: int) -> TextSpan:
        # Nothing further than this from the passage can be added without overrunning widen_to.
        reach = max(0, self._config.widen_to - length)
        return TextSpan(document_id, max(0, start - reach), end + reach)
