"""``gym.make(..., names=...)`` picks which name of each place PoseGraph360's world (its
signs, its maps) uses, and two choices do not share the per-process world cache.

Munich's ``Spielzeugmuseum`` carries ``name:en=Toy Museum`` in the embedded extract.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import urban_gym  # noqa: F401  (registers the ids)
from urban_gym.errors import InputError


def _make(mode: str):
    env = gym.make("UrbanGym/PoseGraph360-v0", city="munich", observation="symbolic", names=mode)
    env.reset(seed=0)
    return env


def test_names_reach_the_world_and_each_has_its_own():
    local, english = _make("local"), _make("english")
    a, b = local.unwrapped, english.unwrapped
    assert (a.names, b.names) == ("local", "english")
    assert "Spielzeugmuseum" in {p.name for p in a.city.pois}
    assert "Toy Museum" in {p.name for p in b.city.pois}
    assert "Toy Museum" not in {p.name for p in a.city.pois}
    assert a.graph.source is not b.graph.source  # frames of other signs, cached apart
    local.close()
    english.close()


def test_a_bad_names_value_is_named():
    with pytest.raises(InputError, match="'latin'"):
        gym.make("UrbanGym/PoseGraph360-v0", observation="symbolic", names="latin")
