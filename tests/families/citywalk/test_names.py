"""``gym.make(..., names=...)`` picks which name of each place CityWalk's world uses.

Munich's ``Spielzeugmuseum`` carries ``name:en=Toy Museum`` in the embedded extract: the
local mode keeps the German name, the English mode shows the English one.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import urban_gym  # noqa: F401  (registers the ids)
from urban_gym.errors import InputError


def _place_names(city) -> set[str]:
    return {p.name for p in city.pois} & {"Spielzeugmuseum", "Toy Museum"}


@pytest.mark.parametrize(
    ("mode", "shown"), [("local", "Spielzeugmuseum"), ("english", "Toy Museum")]
)
def test_names_reach_the_world(mode, shown):
    env = gym.make("UrbanGym/CityWalk-v0", city="munich", view_size=None, names=mode)
    env.reset(seed=0)
    assert env.unwrapped.names == mode
    assert _place_names(env.unwrapped.city) == {shown}
    env.close()


def test_a_bad_names_value_is_named():
    with pytest.raises(InputError, match="'latin'"):
        gym.make("UrbanGym/CityWalk-v0", view_size=None, names="latin")
