"""Schedule periods as people write them: a number and a unit, within bounds, refused with the format otherwise."""

from __future__ import annotations

import pytest

from bot.knowledge.schedules import MAX_EVERY, MIN_EVERY, EveryError, parse_every
from bot.words.messages import shown_period


@pytest.mark.parametrize(
    ("text", "seconds"), [("30m", 1800), ("6h", 21_600), ("1d", 86_400), ("2W", 1_209_600), (" 12 h ", 43_200)]
)
def test_a_period_is_a_number_and_a_unit(text: str, seconds: int) -> None:
    assert parse_every(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "1", "d", "1.5h", "1y", "-1d", "1d2h", "99999d"])
def test_what_does_not_parse_is_refused_with_the_format(text: str) -> None:
    with pytest.raises(EveryError) as refused:
        parse_every(text)
    assert "30m, 6h, 1d or 2w" in refused.value.user_message
    assert "每" not in refused.value.user_message
    assert "30m" in refused.value.message_in("zh")


@pytest.mark.parametrize("text", ["1m", "14m", "53w"])
def test_a_period_out_of_bounds_names_the_bounds(text: str) -> None:
    with pytest.raises(EveryError, match=f"from {shown_period(MIN_EVERY)} to {shown_period(MAX_EVERY)}"):
        parse_every(text)


@pytest.mark.parametrize("seconds", [900, 3600, 86_400, 604_800, 5400])
def test_a_period_is_shown_as_it_is_read(seconds: int) -> None:
    assert parse_every(shown_period(seconds)) == seconds
