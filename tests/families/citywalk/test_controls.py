"""CityWalk's page commands become the env's structured actions, with values checkable by hand."""

from __future__ import annotations

import gymnasium as gym
import pytest

import urban_gym  # noqa: F401
from urban_gym.play.controls import ControlError, to_action


@pytest.fixture(scope="module")
def citywalk():
    env = gym.make("UrbanGym/CityWalk-v0", tasks=None, task_types=["SGN"])
    env.reset(seed=0, options={"task_index": 0})
    yield env
    env.close()


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
