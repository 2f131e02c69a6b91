"""Every family's page: each control is an action of the family, no key clashes."""

from __future__ import annotations

import gymnasium as gym
import pytest

import urban_gym  # noqa: F401
from urban_gym.play.controls import ControlError, family_controls, keys_of, to_action
from urban_gym.tasks.families import FAMILIES


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("UrbanGym/PoseGraph360-Procedural-v0", {}),
        ("UrbanGym/StreetGraph-Procedural-v0", {"observation": "symbolic"}),
        ("UrbanGym/CityWalk-v0", {"task_types": ["SGN"]}),
    ],
)
def test_every_control_is_an_action_of_the_family(env_id, kwargs):
    """Each button's command (default widget values) is accepted by the env's action set,
    and every action name of the set has a button, a key or a gesture."""
    env = gym.make(env_id, **kwargs)
    env.reset(seed=0)
    u = env.unwrapped
    fc = family_controls(u.family)
    params = {w.name: w.default for w in fc.widgets} | {"sprint": False, "option": 0}
    params |= {"text": "A", "dx": 0.1, "dy": 0.1, "x": 0.5, "y": 0.5, "notches": 1}
    ids = [c.id for c in fc.controls] + list(fc.gestures)
    ids += ["answer"] if fc.answer_box else []
    ids += ["option"] if u.family == "streetgraph" else []
    if u.family == "citywalk":
        env.step({"action": "open_map"})  # the drag reads the open map's scale
    names = set()
    shifted = {c.id for c in fc.controls if c.shift}
    for cid in ids:
        for sprint in (False, True) if cid in shifted else (False,):
            a = to_action(u.family, cid, params | {"sprint": sprint}, env)
            names.add(u.action_set.normalise(a)["action"])
    assert names == set(u.action_set.names), set(u.action_set.names) - names
    env.close()


def test_keys_are_unique_within_a_mode():
    """No key presses two controls that are shown at the same time."""
    pages = [f.play_controls() for f in FAMILIES.values() if f.play_controls() is not None]
    assert len(pages) >= 3
    for fc in pages:
        for mode in ("first_person", "map"):
            shown = [c for c in fc.controls if c.mode in (None, mode)]
            clashes = {k: v for k, v in keys_of(shown).items() if len(v) > 1}
            assert not clashes, (fc.family, mode, clashes)
    assert keys_of(family_controls("posegraph360").controls)["ArrowLeft"] == ["LEFT"]
    with pytest.raises(ControlError, match="known: .*posegraph360"):
        family_controls("chess")
