"""MapObservation's ``render()``: its map beside the env's frame (composed by render/frame.py),
the map for watching only (``observe=False``) and the task-area view."""

from __future__ import annotations

import numpy as np
import pytest

from tests.wrappers.recording_env import RecordingEnv
from urban_gym.wrappers.map_observation import MapObservation
from urban_gym.wrappers.state import Pose

WHITE = np.array([255, 255, 255], np.uint8)


def watched(tiny_city, **kw) -> MapObservation:
    base = RecordingEnv(city=tiny_city, render_mode="rgb_array")  # frame: 96 x 128 px
    return MapObservation(base, size=64, view="task", markers="task", **kw)


def test_render_puts_the_map_left_of_the_env_frame(tiny_city):
    env = watched(tiny_city, observe=False)
    obs, _ = env.reset(seed=0)
    # observe=False: the observation and its space are the env's own
    assert "map" not in obs and env.observation_space == env.env.observation_space
    frame = env.render()
    base = env.env.render()
    assert base.shape == (96, 128, 3)
    # 64 px map padded to the frame's 96 px height, then the 128 px env frame
    assert frame.shape == (96, 64 + 128, 3)
    np.testing.assert_array_equal(frame[:64, :64], env.render_map())
    assert (frame[64:, :64] == WHITE).all()
    np.testing.assert_array_equal(frame[:, 64:], base)


def test_observed_map_is_the_rendered_one(tiny_city):
    env = watched(tiny_city)
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step({"action": "move", "direction": "north"})
    np.testing.assert_array_equal(env.render()[:64, :64], obs["map"])
    off = MapObservation(RecordingEnv(city=tiny_city, render_mode="rgb_array"), enabled=False)
    off.reset(seed=0)
    assert off.render().shape == (96, 128, 3)  # the env's frame, nothing added
    assert MapObservation(RecordingEnv(city=tiny_city), size=32).render() is None


def test_task_view_fits_start_and_goal_and_follows_the_agent(tiny_city):
    env = watched(tiny_city, observe=False)
    env.reset(seed=0)
    t = env.env.unwrapped.task
    (sx, sy), (gx, gy) = (t.start["x"], t.start["y"]), (t.goal["x"], t.goal["y"])
    center, mpp, rot = env.window()
    # start and goal are at most 40 m apart: the window is 60 m * 1.3 across, centred
    # between them (the agent stands on the start)
    assert center == pytest.approx(((sx + gx) / 2, (sy + gy) / 2))
    assert mpp == pytest.approx(60.0 * 1.3 / 64) and rot == 0.0
    # an agent 35.1 m (0.45 of the width) or more from the centre moves the window to it
    env._pose = Pose(center[0] + 36.0, center[1])
    assert env.window()[0] == (center[0] + 36.0, center[1])
    env._pose = Pose(center[0] + 40.0, center[1] + 5.0)  # inside the new window: it stays
    assert env.window()[0] == (center[0] + 36.0, center[1])
