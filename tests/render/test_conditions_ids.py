"""Conditions validation and instance id encoding."""

from __future__ import annotations

import numpy as np
import pytest

from urban_gym.errors import UrbanGymError
from urban_gym.render import (
    Conditions,
    RenderError,
    building_id,
    decode_id,
    decode_ids,
    instance_boxes,
    object_id,
    pedestrian_id,
    sign_id,
)


def test_conditions_defaults_and_frozen():
    c = Conditions()
    assert (c.time_of_day, c.weather, c.seed) == ("day", "clear", 0)
    with pytest.raises(AttributeError):
        c.weather = "rain"  # type: ignore[misc]
    assert Conditions.from_dict(c.to_dict()) == c
    assert Conditions("night", "rain", 3).label == "night, rain"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"time_of_day": "noon"}, "time_of_day='noon'"),
        ({"weather": "snow"}, "weather='snow'"),
        ({"seed": 1.5}, "seed=1.5"),
    ],
)
def test_bad_conditions_are_named(kwargs, match):
    with pytest.raises(RenderError, match=match):
        Conditions(**kwargs)
    with pytest.raises(UrbanGymError):
        Conditions(**kwargs)


def test_unknown_condition_key_lists_valid_ones():
    with pytest.raises(RenderError, match="'wind'.*time_of_day"):
        Conditions.from_dict({"wind": 3})


def test_ids_round_trip():
    assert decode_id(0) == ("sky", 0)
    assert decode_id(1) == ("ground", 0)
    assert building_id(5) == 1_000_005 and decode_id(1_000_005) == ("building", 5)
    assert sign_id(17) == 2_000_017 and decode_id(2_000_017) == ("sign", 17)
    assert object_id(0) == 3_000_000 and decode_id(3_000_000) == ("object", 0)
    assert pedestrian_id(2) == 4_000_002 and decode_id(4_000_002) == ("pedestrian", 2)


@pytest.mark.parametrize("bad", [2, 999_999, -1, 5_000_000])
def test_invalid_ids_raise(bad):
    with pytest.raises(RenderError, match=str(bad)):
        decode_id(bad)
    with pytest.raises(RenderError):
        decode_ids(np.array([0, bad]))


def test_decode_ids_vectorised():
    codes, idx = decode_ids(np.array([[0, 1], [1_000_003, 4_000_009]], np.int32))
    assert codes.tolist() == [[0, 1], [2, 5]]
    assert idx.tolist() == [[0, 0], [3, 9]]


def test_instance_boxes_hand_example():
    ids = np.zeros((4, 6), np.int32)
    ids[1:3, 2:5] = 1_000_007
    ids[3, 0] = 1
    boxes = instance_boxes(ids)
    assert boxes[1_000_007] == (2, 1, 5, 3)
    assert boxes[1] == (0, 3, 1, 4)
    assert boxes[0] == (0, 0, 6, 4)
