"""The page's commands become the env's structured actions, with values checkable by hand."""

from __future__ import annotations

import gymnasium as gym
import pytest

import urban_gym  # noqa: F401
from urban_gym.play.controls import (
    CITYWALK,
    POSEGRAPH360,
    STREETGRAPH,
    ControlError,
    family_controls,
    keys_of,
    to_action,
)


@pytest.fixture(scope="module")
def citywalk():
    env = gym.make("UrbanGym/CityWalk-v0", tasks=None, task_types=["SGN"])
    env.reset(seed=0, options={"task_index": 0})
    yield env
    env.close()


def test_posegraph_commands():
    assert to_action("posegraph360", "W", {"size": ""}, None) == {"action": "W", "size": "SMALL"}
    assert to_action("posegraph360", "W", {"size": "LARGE"}, None)["size"] == "LARGE"
    assert to_action("posegraph360", "A", {"size": ""}, None) == {"action": "A", "size": None}
    assert to_action("posegraph360", "RIGHT", {}, None) == {"action": "RIGHT"}
    assert to_action("posegraph360", "answer", {"text": "x:2 y:3"}, None) == {
        "action": "ANSWER",
        "text": "x:2 y:3",
    }
    with pytest.raises(ControlError, match="HUGE"):
        to_action("posegraph360", "W", {"size": "HUGE"}, None)
    with pytest.raises(ControlError, match="'jump'"):
        to_action("posegraph360", "jump", {}, None)


def test_streetgraph_commands():
    assert to_action("streetgraph", "option", {"option": 2}, None) == {"action": "go", "option": 2}
    assert to_action("streetgraph", "stop", {}, None) == {"action": "stop"}
    with pytest.raises(ControlError, match="option='2'"):
        to_action("streetgraph", "option", {"option": "2"}, None)


def test_citywalk_moves_curves_and_looks():
    move = to_action("citywalk", "move_left", {"duration": 1.5, "sprint": False}, None)
    assert move == {"action": "move", "dir": "left", "seconds": 1.5}
    sprint = to_action("citywalk", "move_forward", {"duration": 2, "sprint": True}, None)
    assert sprint["action"] == "sprint"
    # a curve turns by `turn` degrees over `duration` seconds: 30 deg in 2 s = 15 deg/s
    curve = to_action("citywalk", "curve_left", {"duration": 2.0, "turn": 30.0}, None)
    assert curve == {"action": "move", "dir": "forward", "seconds": 2.0, "yaw_rate": -15.0}
    fast = to_action("citywalk", "curve_right", {"duration": 0.5, "turn": 180.0}, None)
    assert fast["yaw_rate"] == 180.0  # 360 deg/s would be out of range: at most 180
    assert to_action("citywalk", "look_left", {"turn": 45}, None) == {
        "action": "look",
        "yaw": -45.0,
    }
    assert to_action("citywalk", "look_up", {}, None) == {
        "action": "look",
        "yaw": 0.0,
        "pitch": 30.0,
    }
    # looking is relative, as UrbanGround's look: down tilts by -30 degrees
    assert to_action("citywalk", "look_down", {}, None)["pitch"] == -30.0
    assert to_action("citywalk", "terminate", {}, None) == {"action": "terminate"}
    # the answer box (and 1-4) answer in the answer turn after terminate
    assert to_action("citywalk", "answer", {"text": " B "}, None) == {
        "action": "answer",
        "answer": "B",
    }
    assert to_action("citywalk", "answer", {"text": ""}, None)["answer"] is None
    with pytest.raises(ControlError, match="duration='fast'"):
        to_action("citywalk", "move_forward", {"duration": "fast"}, None)
    with pytest.raises(ControlError, match="finite"):
        to_action("citywalk", "look_left", {"turn": float("nan")}, None)


def test_citywalk_map_gestures(citywalk):
    u = citywalk.unwrapped
    citywalk.step({"action": "open_map"})
    size = u.view_size  # 128 px
    cx, cy = u.map.center
    assert u.map.mpp == 2.0 and u.map.rotation == 0.0
    # dragging the map a quarter of its width to the right shows what lies west:
    # 32 px * 2 m/px = 64 m west; a quarter down shows 64 m north
    a = to_action("citywalk", "map_drag", {"dx": 0.25, "dy": 0.25}, citywalk)
    assert a == {"action": "map_pan", "east": -64.0, "north": 64.0}
    assert size * 0.25 * 2.0 == 64.0
    citywalk.step({"action": "map_orbit", "yaw": 90.0})
    # rotated 90 deg clockwise the image's right is south: a drag right shows the north
    a = to_action("citywalk", "map_drag", {"dx": 0.25, "dy": 0.0}, citywalk)
    assert a["east"] == pytest.approx(0.0, abs=1e-6) and a["north"] == pytest.approx(64.0)
    citywalk.step(a)
    assert u.map.center == pytest.approx((cx, cy + 64.0))
    # one wheel notch towards the person zooms out by 2 (UrbanGround: a factor above 1
    # moves farther); the factor stays in [0.25, 4]
    wheel = [to_action("citywalk", "map_wheel", {"notches": n}, citywalk) for n in (1, -2, 5)]
    assert [w["factor"] for w in wheel] == [2.0, 0.25, 4.0]
    assert to_action("citywalk", "map_zoom_in", {}, citywalk)["factor"] == 0.5
    assert to_action("citywalk", "map_tilt_up", {}, citywalk) == {
        "action": "map_orbit",
        "pitch": 20.0,
    }
    click = to_action("citywalk", "map_click", {"x": 0.5, "y": 0.25}, citywalk)
    assert click == {"action": "map_select", "x": 0.5, "y": 0.25}


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
    for fc in (POSEGRAPH360, STREETGRAPH, CITYWALK):
        for mode in ("first_person", "map"):
            shown = [c for c in fc.controls if c.mode in (None, mode)]
            clashes = {k: v for k, v in keys_of(shown).items() if len(v) > 1}
            assert not clashes, (fc.family, mode, clashes)
    assert keys_of(POSEGRAPH360.controls)["ArrowLeft"] == ["LEFT"]
    with pytest.raises(ControlError, match="known: posegraph360"):
        family_controls("chess")
