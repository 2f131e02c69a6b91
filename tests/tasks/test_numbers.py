"""The number an answer states: digits in text, English number words, which of several."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from urban_gym.tasks.numbers import TENS, UNITS, read_number


@pytest.mark.parametrize(
    "text,expected",
    [
        # digits inside text
        ("4", 4.0),
        ("I counted 4 signs", 4.0),
        ("about 12 trees", 12.0),
        ("There are 4.", 4.0),
        ("-3", -3.0),
        ("2.5", 2.5),
        ("2,5", 2.5),  # a decimal comma
        ("1,200", 1200.0),  # thousands grouped by a comma
        ("1,2345", 1.2345),
        # digits glued to letters are not a count
        ("the 12th", None),
        ("50m", None),
        ("shop B12", None),
        # number words
        ("There are four.", 4.0),
        ("Eleven", 11.0),
        ("twenty-one", 21.0),
        ("twenty one", 21.0),
        ("Forty-two benches", 42.0),
        ("ninety", 90.0),
        ("a dozen", 12.0),
        ("one dozen", 12.0),
        ("half a dozen", 6.0),
        ("two dozen", 24.0),
        ("zero", 0.0),
        ("none", 0.0),
        # "no" before a noun is 0 only when nothing else is stated
        ("There are no vending machines.", 0.0),
        ("No, there are four.", 4.0),
        ("No.", None),
        # "one" as a pronoun
        ("the one on the left", None),
        ("one of them is broken", None),
        ("One.", 1.0),
        # no number at all
        ("I could not tell", None),
        ("", None),
    ],
)
def test_read_number(text, expected):
    assert read_number(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        # the last number stated
        ("3 on the left and 4 on the right, so 7", 7.0),
        ("3 on the left and 4 on the right, 7 in total", 7.0),
        ("four or five", 5.0),
        ("4-5", 5.0),
        # unless an answer marker points at another: the first number after the last one
        ("Answer: 7 (within 50 m of the crossing)", 7.0),
        ("Total: 7, counted over 2 blocks", 7.0),
        ("In all there are 6 of them on 3 corners", 6.0),
        ("3 + 4 = 7 signs, seen from 2 places", 7.0),
        ("The answer is nine, after 20 steps", 9.0),
    ],
)
def test_which_of_several_numbers(text, expected):
    assert read_number(text) == expected


def test_numbers_pass_through():
    assert read_number(3) == 3.0 and read_number(2.5) == 2.5
    assert read_number(float("nan")) is None and read_number(True) is None
    assert read_number(None) is None


@given(st.integers(0, 99))
def test_every_word_from_zero_to_ninety_nine(n):
    words = {v: k for k, v in UNITS.items()}
    tens = {v: k for k, v in TENS.items()}
    if n < 20:
        phrase = words[n]
    elif n % 10 == 0:
        phrase = tens[n]
    else:
        phrase = f"{tens[n - n % 10]}-{words[n % 10]}"
    assert read_number(f"There are {phrase}.") == float(n)
    assert read_number(f"I counted {n} of them") == float(n)
