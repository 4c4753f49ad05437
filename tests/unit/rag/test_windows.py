"""Long passages cut into windows of whole sentences."""

from __future__ import annotations

from rag.windows import passage_windows, word_count


def test_a_short_passage_has_no_windows() -> None:
    assert passage_windows("The office is open from 9 to 17. Visitors park in garage B.") == []


def test_a_long_passage_is_cut_between_sentences_and_rows_within_the_size() -> None:
    rows = "\n".join(f"| `ragbot cmd{n}` | does thing number {n} for the team |" for n in range(30))
    windows = passage_windows(rows, max_words=20)
    assert len(windows) > 1
    assert all(word_count(window) <= 20 for window in windows)
    assert " ".join(windows).split() == rows.split()


def test_a_sentence_longer_than_a_window_is_its_own_window() -> None:
    long = " ".join(["word"] * 50) + "."
    assert passage_windows(f"{long} Short one. Another short one.", max_words=20) == [
        long,
        "Short one. Another short one.",
    ]


def test_chinese_counts_characters() -> None:
    text = "。".join(["员工每年享有十五天带薪年假"] * 10) + "。"
    windows = passage_windows(text, max_words=30)
    assert len(windows) > 1
    assert all(word_count(window) <= 30 for window in windows)
