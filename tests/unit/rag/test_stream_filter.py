"""StreamFilter: think blocks removed and NO_MATCH spotted however the stream is split."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rag.stream_filter import NO_MATCH, StreamFilter


def run(deltas: Iterable[str]) -> tuple[str, bool]:
    """The text a person would see, and whether NO_MATCH was detected."""
    stream = StreamFilter()
    shown = [stream.feed(delta) for delta in deltas]
    shown.append(stream.finish())
    return "".join(shown), stream.no_match


def reference(text: str) -> tuple[str, bool]:
    """Non-incremental statement of the rules, to check the incremental filter against."""
    pairs = {"<think>": "</think>", "<thinking>": "</thinking>"}
    folded = text.translate(str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"))
    visible, at = [], 0
    while True:
        found = [(folded.find(tag, at), tag) for tag in pairs if folded.find(tag, at) >= 0]
        if not found:
            visible.append(text[at:])
            break
        start, tag = min(found)
        visible.append(text[at:start])
        end = folded.find(pairs[tag], start + len(tag))
        if end < 0:
            break
        at = end + len(pairs[tag])
    answer = "".join(visible).lstrip()
    return ("", True) if answer.startswith(NO_MATCH) else (answer, False)


def splits(text: str, cuts: Iterable[int]) -> list[str]:
    points = sorted({0, len(text), *(cut % (len(text) + 1) for cut in cuts)})
    return [text[a:b] for a, b in pairwise(points)]


FRAGMENTS = [
    *("<think>", "</think>", "<thinking>", "</thinking>", "<THINK>", "</Think>", "<th", "ink>", "</", "<", ">"),
    *(NO_MATCH, "NO_", "MATCH", "NO", "_", "N", " ", "\n", "\t", "a", "Hello", "中文", "İ", "K", "/", "think"),
]
streams = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=3), max_size=30).map("".join)


@given(text=streams, cuts=st.lists(st.integers(min_value=0), max_size=12))
@example(text="<think>reasoning</think>Answer", cuts=[3, 8, 20])
@example(text="  <thinking>x</thinking>\nNO_MATCH sorry", cuts=[27])
def test_any_split_gives_the_same_output_as_the_whole(text: str, cuts: list[int]) -> None:
    assert run(splits(text, cuts)) == run([text])


@given(text=streams)
def test_output_follows_the_reference_rules(text: str) -> None:
    assert run([text]) == reference(text)


@given(text=streams)
def test_character_by_character_equals_whole(text: str) -> None:
    assert run(list(text)) == run([text])


@pytest.mark.parametrize("tag", ["think", "thinking"])
def test_think_block_split_at_every_boundary_is_removed(tag: str) -> None:
    text = f"<{tag}>let me reason</{tag}>The answer is 4."
    for cut in range(len(text) + 1):
        for second in range(cut, len(text) + 1):
            assert run([text[:cut], text[cut:second], text[second:]]) == ("The answer is 4.", False)


@pytest.mark.parametrize(
    ("deltas", "shown"),
    [
        (["<th", "ink>secret</th", "ink>Visible"], "Visible"),
        (["Before <think>", "hidden", "</think> after"], "Before  after"),
        (["<thinking>", "plan", "</thinking>", "Done"], "Done"),
        (["<THINK>x</Think>ok"], "ok"),
        (["<think>never closed, all reasoning"], ""),
        (["Answer first. <think>trailing thoughts"], "Answer first. "),
        (["a < b and c > d"], "a < b and c > d"),
        (["<thin", "g>"], "<thing>"),
        (["ends with <thi"], "ends with <thi"),
        (["</think>stray close tag"], "</think>stray close tag"),
    ],
)
def test_think_blocks_are_removed(deltas: list[str], shown: str) -> None:
    assert run(deltas) == (shown, False)


@pytest.mark.parametrize(
    "deltas",
    [
        [NO_MATCH],
        ["NO_", "MATCH"],
        ["N", "O", "_", "M", "A", "T", "C", "H", " I don't know."],
        ["\n  NO_MATCH: the sources do not say."],
        ["<think>The sources lack it.</think>", "\n\n", "NO_MATCH"],
        ["<think>x</th", "ink>NO_", "MATCH and more text"],
    ],
)
def test_no_match_at_the_start_is_detected_and_nothing_is_shown(deltas: list[str]) -> None:
    assert run(deltas) == ("", True)


def test_nothing_is_emitted_after_no_match() -> None:
    stream = StreamFilter()
    assert stream.feed("NO_MATCH") == ""
    assert stream.no_match
    assert stream.feed(" but here is a guess anyway") == ""
    assert stream.finish() == ""


@pytest.mark.parametrize(
    ("deltas", "shown"),
    [
        (["The answer is NO_MATCH for you."], "The answer is NO_MATCH for you."),
        (["Answer: ", "NO_", "MATCH"], "Answer: NO_MATCH"),
        (["NO_MA"], "NO_MA"),
        (["NO_", "MAT", "TRESS"], "NO_MATTRESS"),
        (["NO MATCH"], "NO MATCH"),
    ],
)
def test_no_match_elsewhere_is_ordinary_text(deltas: list[str], shown: str) -> None:
    assert run(deltas) == (shown, False)


def test_visible_text_is_released_as_soon_as_it_cannot_be_a_tag() -> None:
    stream = StreamFilter()
    assert stream.feed("Hello") == "Hello"
    assert stream.feed(" world <thi") == " world "
    assert stream.feed("s is not a tag") == "<this is not a tag"
    assert stream.feed(" x <thinking") == " x "  # the longest possible partial tag: 9 characters held
    assert stream.feed(">hidden</thinking>") == ""
    assert stream.feed("!") == "!"
    assert stream.finish() == ""


def test_leading_whitespace_is_dropped_and_the_start_held_only_while_it_could_be_no_match() -> None:
    stream = StreamFilter()
    assert stream.feed("\n\n  ") == ""
    assert stream.feed("NO") == ""
    assert stream.feed("T") == "NOT"
    assert stream.finish() == ""
    assert not stream.no_match


@given(text=st.text(alphabet="abc xyz.!,\n", min_size=1))
def test_text_without_tags_flows_through_once_started(text: str) -> None:
    stream = StreamFilter()
    assert stream.feed("Start ") == "Start "
    assert "".join(stream.feed(ch) for ch in text) == text


def test_feed_after_finish_is_a_bug() -> None:
    stream = StreamFilter()
    stream.finish()
    with pytest.raises(RuntimeError, match="after finish"):
        stream.feed("late")
