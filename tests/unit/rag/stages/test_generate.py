"""The answer stage: direct FAQ answers, extractive answers without a model, streamed and filtered model answers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

import pytest

from rag.config import AnswerConfig
from rag.errors import ModelError
from rag.extractive import ExtractiveConfig
from rag.lexical import LexicalAnalyzer
from rag.pipeline import TurnContext
from rag.stages.filter_top_k import FilterTopK
from rag.stages.generate import Generate
from rag.types import Candidate, ChatMessage


class ScriptedModel:
    """Our ChatModel protocol, streaming scripted deltas (and failing where told)."""

    model_id = "scripted"

    def __init__(self, deltas: Sequence[str], *, fail_after: int | None = None, reply: str = "plain answer") -> None:
        self.deltas = deltas
        self.fail_after = fail_after
        self.reply = reply
        self.calls = 0

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        return self.reply

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        self.calls += 1
        for index, delta in enumerate(self.deltas):
            if self.fail_after is not None and index == self.fail_after:
                raise ModelError("chat model answered 500", status=500)
            yield delta


def _faq(score: float) -> Candidate:
    return Candidate(
        id="f",
        kind="faq",
        kb_id="kb",
        text="Q: Leave?\nAnswer: - 25 days",
        score=score,
        metadata={"question": "Leave?", "answers": ["25 days a year."]},
    )


def _chunk(text: str = "The office is open from 9 to 17.") -> Candidate:
    return Candidate(id="c", kind="chunk", kb_id="kb", text=text, score=0.02, metadata={"title": "handbook.md"})


async def _answer(model: ScriptedModel | None, selected: list[Candidate], **config: object) -> tuple[str, TurnContext]:
    turn = TurnContext(query="When is the office open?", kb_ids=("kb",), selected=selected)
    await Generate(model, AnswerConfig(**config)).run(turn)  # type: ignore[arg-type]
    assert turn.answer is not None
    return "".join([piece async for piece in turn.answer]), turn


async def test_a_confident_faq_is_answered_verbatim_without_the_model() -> None:
    model = ScriptedModel(["never"])
    text, turn = await _answer(model, [_faq(0.95), _chunk()])
    assert text == "25 days a year."
    assert turn.outcome == "faq_direct"
    assert model.calls == 0


async def test_a_weak_faq_goes_to_the_model_instead() -> None:
    text, turn = await _answer(ScriptedModel(["Open ", "9 to 17 [1]."]), [_faq(0.6), _chunk()])
    assert text == "Open 9 to 17 [1]."
    assert turn.outcome == "generated"


async def test_without_a_model_the_sentence_that_answers_is_quoted() -> None:
    passage = _chunk("Parking is free for staff. The office is open from 9 to 17. Lunch is at noon.")
    text, turn = await _answer(None, [passage])
    assert text == "> The office is open from 9 to 17. [1]"
    assert turn.outcome == "extractive"


async def test_a_question_sharing_no_word_with_what_was_found_where_vectors_are_not_trusted_finds_nothing() -> None:
    turn = TurnContext(query="如何导入一个文件夹？", kb_ids=("kb",), selected=[_chunk()])
    await Generate(None, AnswerConfig()).run(turn)
    assert turn.answer is not None
    text = "".join([piece async for piece in turn.answer])
    assert text == AnswerConfig().fallback_text or "没有找到" in text
    assert turn.outcome == "no_match"


async def test_an_english_question_matched_by_meaning_alone_quotes_the_top_passage() -> None:
    turn = TurnContext(query="When can I come in?", kb_ids=("kb",), selected=[_chunk()])
    await Generate(None, AnswerConfig()).run(turn)
    assert turn.answer is not None
    assert "".join([piece async for piece in turn.answer]) == "> The office is open from 9 to 17. [1]"
    assert turn.outcome == "extractive"


async def test_the_extractive_answer_stays_within_its_configured_budget() -> None:
    passage = _chunk("The office is open " + "and staffed " * 60 + "until late.")
    text, _ = await _answer(None, [passage], extractive=ExtractiveConfig(max_chars=100))
    assert len(text) <= 100
    assert text.endswith("… [1]")


async def test_a_confident_faq_is_verbatim_without_a_model_even_when_not_answered_directly() -> None:
    text, turn = await _answer(None, [_faq(0.95), _chunk()], answer_faq_directly=False)
    assert text == "25 days a year."
    assert turn.outcome == "extractive"


async def test_a_weak_top_faq_is_one_source_among_others_without_a_model() -> None:
    chunk = _chunk()
    text, turn = await _answer(None, [_faq(0.5), chunk])
    # Only the passage quoted is a source, numbered as the answer numbers it.
    assert text == "> The office is open from 9 to 17. [1]"
    assert turn.selected == [chunk]


async def test_without_a_model_only_the_passages_quoted_are_sources_numbered_in_order() -> None:
    parking = replace(_chunk("Visitors park in garage B."), id="p")
    office = replace(_chunk(), id="o")
    lunch = replace(_chunk("Lunch is served from 12 to 14."), id="l")
    text, turn = await _answer(None, [parking, office, lunch])
    assert text == "> The office is open from 9 to 17. [1]"
    assert turn.selected == [office]


class CountingEmbedder:
    """Our Embedder protocol: a vector per text that says whether it mentions the office, calls recorded."""

    provider = "fake"
    model_id = "fake"
    dimension = 2

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def prompt(self, kind: str) -> str:
        return ""

    async def embed(self, texts: Sequence[str], *, kind: str = "passage") -> list[list[float]]:
        self.calls.append(list(texts))
        return [[1.0, 0.0] if "office" in text else [0.0, 1.0] for text in texts]


@pytest.mark.parametrize(("query", "embedded"), [("When is the office open?", True), ("办公室几点开门？", False)])
async def test_sentences_are_embedded_in_one_batch_only_for_a_served_language(query: str, embedded: bool) -> None:
    embedder = CountingEmbedder()
    passage = _chunk("Parking is free. The office is open from 9 to 17.")
    turn = TurnContext(query=query, kb_ids=("kb",), selected=[passage], query_vector=[1.0, 0.0])
    await Generate(None, AnswerConfig(), embedder=embedder).run(turn)  # type: ignore[arg-type]
    assert turn.answer is not None
    text = "".join([piece async for piece in turn.answer])
    assert embedder.calls == ([["Parking is free.", "The office is open from 9 to 17."]] if embedded else [])
    # Unembedded, the Chinese question shares no word with the English passage: nothing was found about it.
    assert text.startswith("> ") if embedded else turn.outcome == "no_match"


async def test_think_blocks_are_removed_from_the_stream() -> None:
    text, _ = await _answer(ScriptedModel(["<thi", "nk>let me see</th", "ink>Open 9", " to 17."]), [_chunk()])
    assert text == "Open 9 to 17."


@pytest.mark.parametrize(
    ("fallback", "expected"),
    [("extractive", "> The office is open"), ("fixed", "Nothing found."), ("model", "plain answer")],
)
async def test_no_match_uses_the_configured_fallback(fallback: str, expected: str) -> None:
    model = ScriptedModel(["NO_", "MATCH the sources do not say"])
    text, turn = await _answer(model, [_chunk()], fallback=fallback, fallback_text="Nothing found.")
    assert text.startswith(expected)
    assert "NO_MATCH" not in text
    assert turn.outcome == "no_match"


async def test_a_model_error_before_any_text_falls_back_to_quoting() -> None:
    text, turn = await _answer(ScriptedModel(["a"], fail_after=0), [_chunk()])
    assert text.startswith("> The office is open")
    assert turn.outcome == "model_error"


async def test_a_model_error_mid_answer_is_raised_to_the_turn_boundary() -> None:
    turn = TurnContext(query="When?", kb_ids=("kb",), selected=[_chunk()])
    await Generate(ScriptedModel(["Open ", "9", " to"], fail_after=2), AnswerConfig()).run(turn)
    assert turn.answer is not None
    shown: list[str] = []

    async def read(stream: AsyncIterator[str]) -> None:
        async for piece in stream:
            shown.append(piece)

    with pytest.raises(ModelError):
        await read(turn.answer)
    assert "".join(shown) == "Open 9"


async def test_top_k_falls_back_from_merged_to_reranked_to_candidates() -> None:
    turn = TurnContext(query="q", kb_ids=("kb",), candidates=[_chunk(str(n)) for n in range(5)])
    await FilterTopK(2).run(turn)
    assert [c.text for c in turn.selected] == ["0", "1"]
    turn.reranked = [_chunk("r")]
    await FilterTopK(2).run(turn)
    assert [c.text for c in turn.selected] == ["r"]


async def test_stream_answer_hands_each_piece_on_and_keeps_the_whole_text() -> None:
    from rag.stages.stream_answer import StreamAnswer

    seen: list[str] = []

    async def on_text(piece: str) -> None:
        seen.append(piece)

    turn = TurnContext(query="q", kb_ids=("kb",), on_text=on_text)
    turn.outcome = "generated"
    turn.answer = _pieces(["Open ", "", "9 to 17."])
    note = await StreamAnswer().run(turn)
    assert (seen, turn.text, turn.outcome) == (["Open ", "9 to 17."], "Open 9 to 17.", "generated")
    assert note == "pieces=2 chars=13 outcome=generated"


async def test_stream_answer_stops_at_once_when_asked_even_while_the_model_is_silent() -> None:
    import asyncio

    from rag.stages.stream_answer import StreamAnswer

    stop = asyncio.Event()
    closed = asyncio.Event()

    async def model() -> AsyncIterator[str]:
        try:
            yield "Open "
            stop.set()  # the asker presses stop while the model thinks
            await asyncio.Event().wait()  # a model that never sends its next token
            yield "never"
        finally:
            closed.set()

    turn = TurnContext(query="q", kb_ids=("kb",), stop=stop)
    turn.answer = model()
    await asyncio.wait_for(StreamAnswer().run(turn), 5)
    assert (turn.text, turn.outcome) == ("Open ", "stopped")
    await asyncio.wait_for(closed.wait(), 5)  # the model's stream was closed, not left running


async def test_stream_answer_stopped_while_a_piece_is_handed_on_delivers_that_piece_whole_and_reads_no_more() -> None:
    import asyncio

    from rag.stages.stream_answer import StreamAnswer

    stop = asyncio.Event()
    read: list[str] = []
    seen: list[str] = []

    async def model() -> AsyncIterator[str]:
        for piece in ("Open ", "9 to 17."):
            read.append(piece)
            yield piece

    async def on_text(piece: str) -> None:
        stop.set()  # the asker presses stop while the first piece is on its way to the chat
        await asyncio.sleep(0)
        seen.append(piece)

    turn = TurnContext(query="q", kb_ids=("kb",), on_text=on_text, stop=stop)
    turn.answer = model()
    await asyncio.wait_for(StreamAnswer().run(turn), 5)
    assert (seen, read, turn.text, turn.outcome) == (["Open "], ["Open "], "Open ", "stopped")


async def test_stream_answer_passes_the_models_error_on_when_not_stopped() -> None:
    import asyncio

    from rag.errors import ModelError
    from rag.stages.stream_answer import StreamAnswer

    async def model() -> AsyncIterator[str]:
        yield "Open "
        raise ModelError("connection reset")

    turn = TurnContext(query="q", kb_ids=("kb",), stop=asyncio.Event())
    turn.answer = model()
    with pytest.raises(ModelError):
        await asyncio.wait_for(StreamAnswer().run(turn), 5)
    assert turn.text == "Open "


async def _pieces(pieces: list[str]) -> AsyncIterator[str]:
    for piece in pieces:
        yield piece


async def test_a_chats_own_fallback_text_is_said_when_nothing_fits() -> None:
    turn = TurnContext(query="Who won the match?", kb_ids=("kb",), fallback_text="Ask the front desk, ext. 100.")
    await Generate(None, AnswerConfig()).run(turn)
    assert turn.answer is not None
    assert "".join([piece async for piece in turn.answer]) == "Ask the front desk, ext. 100."
    assert turn.outcome == "no_match"


async def test_a_chinese_question_sharing_only_function_words_with_the_passages_gets_the_decline() -> None:
    # docs/faq-import.md's example row: 的, 是 and 什么 are all it shares with the question.
    row = _chunk("| 如何申请退货？ | 在“我的订单”中选择商品，点击“申请退货”。 | 怎么退货\\|退货流程是什么 | 是 |")
    turn = TurnContext("公司的年假政策是什么？", ("kb",), selected=[row], fallback_text="没有找到相关内容。")
    await Generate(None, AnswerConfig(), terms=LexicalAnalyzer().tokens).run(turn)
    assert turn.answer is not None
    assert ("".join([piece async for piece in turn.answer]), turn.outcome) == ("没有找到相关内容。", "no_match")


async def test_stream_answer_past_its_deadline_ends_with_what_was_written_and_closes_the_model() -> None:
    import asyncio

    from rag.stages.stream_answer import StreamAnswer

    closed = asyncio.Event()
    read: list[str] = []

    async def trickling_model() -> AsyncIterator[str]:
        # Each token comes well within a per-read timeout, so only a deadline on the whole answer ends it.
        try:
            while True:
                read.append("token ")
                yield "token "
                await asyncio.sleep(0.01)
        finally:
            closed.set()

    turn = TurnContext(query="q", kb_ids=("kb",), deadline=0.2)
    turn.answer = trickling_model()
    await asyncio.wait_for(StreamAnswer().run(turn), 5)
    assert turn.outcome == "timed_out"
    assert turn.text.startswith("token token ")  # what was written is kept
    assert turn.text.count("token ") <= len(read)
    await asyncio.wait_for(closed.wait(), 5)


async def test_stream_answer_within_its_deadline_is_untouched() -> None:
    from rag.stages.stream_answer import StreamAnswer

    turn = TurnContext(query="q", kb_ids=("kb",), deadline=30.0)
    turn.outcome = "generated"
    turn.answer = _pieces(["Open ", "9 to 17."])
    await StreamAnswer().run(turn)
    assert (turn.text, turn.outcome) == ("Open 9 to 17.", "generated")
