"""check_question: unusable questions get a polite refusal, long ones are cut at a boundary and still answered."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.input_check import (
    check_question,
    decode_user_bytes,
    small_talk,
    truncate_text,
)


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        ("", "empty"),
        ("   \n\t  ", "empty"),
        ("\x00\x07\x1b", "empty"),
        ("\ufeff", "empty"),
        ("😀🎉👍", "no_words"),
        ("👨‍👩‍👧 ❤️", "no_words"),
        ("???!!! ...", "no_words"),
        ("？！。，", "no_words"),
        ("→ ★ ©", "no_words"),
        ("what is \ufffd?", "unreadable"),
        ("\ufffd\ufffd", "unreadable"),
        ("lone \ud800 surrogate", "unreadable"),
        ("low \udc80", "unreadable"),
    ],
)
def test_unusable_questions_are_refused_politely(text: str, refusal: str) -> None:
    check = check_question(text)
    assert not check.ok
    assert check.refusal == refusal
    assert "\n" not in refusal


@pytest.mark.parametrize(
    "text",
    ["How do I reset my password?", "密码怎么重置", "42", "¿Qué es RAG?", "😀 what's this emoji?", "Ω", "٣"],
)
def test_questions_with_letters_or_digits_in_any_script_pass(text: str) -> None:
    check = check_question(text)
    assert check.ok
    assert check.refusal is None
    assert check.text == text
    assert not check.truncated


def test_text_is_cleaned_nfc_stripped_and_without_control_characters() -> None:
    check = check_question("  \ufeffCafe\u0301\x00 menu\r\nline two\ttab\x1b[0m \n")
    assert check.ok
    assert check.text == "Café menu\nline two\ttab[0m"


def test_a_20k_character_question_is_truncated_at_a_sentence_and_answered() -> None:
    sentence = "Please explain how the backup job handles a failed upload. "
    text = sentence * (20_000 // len(sentence) + 1)
    check = check_question(text, max_chars=4000)
    assert check.ok
    assert check.truncated
    assert check.refusal is None
    assert 2000 <= len(check.text) <= 4000
    assert check.text.endswith("upload.")


def test_truncation_falls_back_to_a_word_boundary() -> None:
    text = "word " * 100
    cut = truncate_text(text.strip(), 42)
    assert len(cut) <= 42
    assert cut.endswith("word")


def test_truncation_of_chinese_cuts_after_a_full_width_stop() -> None:
    text = "这是第一句话。" * 10
    cut = truncate_text(text, 30)
    assert len(cut) <= 30
    assert cut.endswith("。")


def test_truncation_without_any_boundary_cuts_hard_but_not_inside_a_combining_sequence() -> None:
    assert truncate_text("x" * 50, 10) == "x" * 10
    assert truncate_text("e\u0301" * 20, 9) == "e\u0301" * 4


@given(text=st.text(min_size=1, max_size=300), max_chars=st.integers(min_value=1, max_value=120))
def test_checked_text_never_exceeds_max_chars(text: str, max_chars: int) -> None:
    check = check_question(text, max_chars=max_chars)
    assert len(check.text) <= max_chars or not check.ok
    if check.ok:
        assert check.text == check.text.strip()
        assert check.truncated == (check.text != check_question(text, max_chars=10_000).text)


def test_max_chars_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        check_question("hello", max_chars=0)


@pytest.mark.parametrize(
    ("data", "text"),
    [
        ("hello 世界".encode(), "hello 世界"),
        (b"\xef\xbb\xbfwith bom", "with bom"),
        (b"bad \xff byte", "bad \ufffd byte"),
        (b"cut \xe4\xb8", "cut \ufffd"),
    ],
)
def test_decode_user_bytes_never_raises_and_marks_invalid_bytes(data: bytes, text: str) -> None:
    assert decode_user_bytes(data) == text


def test_invalid_bytes_end_in_a_refusal_not_an_error() -> None:
    check = check_question(decode_user_bytes(b"what is \xc3\x28 this"))
    assert check.refusal == "unreadable"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("hi", "greeting"),
        ("Hello!", "greeting"),
        ("hey there 👋", "greeting"),
        ("Good morning", "greeting"),
        ("你好", "greeting"),
        ("您好！", "greeting"),
        ("thanks!", "thanks"),
        ("Thank you", "thanks"),
        ("thanks a lot :)", "thanks"),
        ("谢谢", "thanks"),
        ("非常感谢！", "thanks"),
    ],
)
def test_a_whole_short_greeting_or_thanks_is_small_talk(text: str, kind: str) -> None:
    assert small_talk(text) == kind


@pytest.mark.parametrize(
    "text",
    [
        "hi, how do I reset my password?",
        "Hello world in Python?",
        "thanks, but how many vacation days do I get?",
        "你好，年假有几天？",
        "谢谢，那病假呢？",
        "How are you?",
        "high availability",
        "Thanks to whom is the VPN free?",
    ],
)
def test_a_question_that_opens_with_a_greeting_or_thanks_is_a_question(text: str) -> None:
    assert small_talk(text) is None
