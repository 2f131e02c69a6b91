"""The checks of plain JSON data: the fast path (exact built-in types) agrees with the
rule-by-rule one that names the bad value."""

from __future__ import annotations

import enum
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import nested_json
from urban_gym.world.jsondata import MAX_DEPTH, MAX_INT, JSONDataError, _check, check_value


class Level(enum.IntEnum):
    LOW = 1


def nested(value, levels):
    for _ in range(levels):
        value = [value]
    return value


GOOD = [
    None,
    True,
    0,
    MAX_INT,
    -MAX_INT,
    1.5,
    "Töölö",
    {"a": [1, 2.0, "x", None, {"b": False}]},
    (1, "two"),
    Level.LOW,  # an int subclass: the rule-by-rule path decides, and accepts it
    nested(1, MAX_DEPTH),
]
BAD = [
    (MAX_INT + 1, "out of range"),
    (-MAX_INT - 1, "out of range"),
    (math.inf, "not a finite number"),
    (math.nan, "not a finite number"),
    ("go \ud800", "lone surrogate"),
    ({"k": {1: 2}}, "not a string"),
    ({"ok": [1, {"deep": math.inf}]}, r"ok\[1\]\.deep=inf"),
    (nested(1, MAX_DEPTH + 1), "nested more than"),
    ({1, 2}, "is a set"),
]


@pytest.mark.parametrize("value", GOOD, ids=repr)
def test_plain_data_passes(value):
    check_value(value)
    _check(value, "", 0)


@pytest.mark.parametrize(("value", "match"), BAD, ids=lambda v: repr(v)[:30])
def test_bad_data_is_named(value, match):
    with pytest.raises(JSONDataError, match=match):
        check_value(value, "task")


# beyond JSON data too: NaN, infinities, integers past 64 bits
json_values = nested_json(
    st.none()
    | st.booleans()
    | st.integers(-(2**65), 2**65)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_the_fast_path_agrees_with_the_rules(value):
    def outcome(fn):
        try:
            fn()
        except JSONDataError as exc:
            return str(exc)
        return None

    assert outcome(lambda: check_value(value, "v")) == outcome(lambda: _check(value, "v", 0))
