"""``gym.make(..., names=...)`` picks which name of each place StreetGraph's rendered
views show (the world its panorama renderer draws).

Munich's ``Spielzeugmuseum`` carries ``name:en=Toy Museum`` in the embedded extract.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import urban_gym  # noqa: F401  (registers the ids)
from urban_gym.errors import InputError


@pytest.mark.parametrize(
    ("mode", "shown", "hidden"),
    [("local", "Spielzeugmuseum", "Toy Museum"), ("english", "Toy Museum", "Spielzeugmuseum")],
)
def test_names_reach_the_rendered_world(mode, shown, hidden):
    env = gym.make("UrbanGym/StreetGraph-v0", city="munich", image_size=16, names=mode)
    env.reset(seed=0)
    u = env.unwrapped
    assert u.images and u.names == mode
    (renderer,) = u._renderers.values()
    names = {p.name for p in renderer.city.pois}
    assert shown in names and hidden not in names
    env.close()


def test_a_bad_names_value_is_named():
    with pytest.raises(InputError, match="'latin'"):
        gym.make("UrbanGym/StreetGraph-v0", observation="symbolic", names="latin")
