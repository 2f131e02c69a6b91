"""The map observation on the recording env placed in a tiny procedural city."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from tests.wrappers.recording_env import RecordingEnv
from urban_gym.errors import UrbanGymError
from urban_gym.render.map import STYLE
from urban_gym.wrappers.map_observation import MapObservation


def colour_pixels(img: np.ndarray, rgb) -> int:
    return int((np.abs(img.astype(int) - np.asarray(rgb)).sum(axis=2) < 30).sum())


def test_agent_centred_map_follows_the_agent(tiny_city):
    env = MapObservation(RecordingEnv(city=tiny_city), size=64, metres_per_pixel=1.0)
    obs, info = env.reset(seed=0)
    assert obs["map"].shape == (64, 64, 3) and obs["map"].dtype == np.uint8
    center, mpp, rot = env.window()
    assert center == (info["pose"]["x"], info["pose"]["y"]) and mpp == 1.0 and rot == 0.0
    assert colour_pixels(obs["map"], STYLE["agent_fill"]) > 0
    obs, *_, info = env.step({"action": "move", "direction": "north"})
    assert env.window()[0] == (info["pose"]["x"], info["pose"]["y"])


def test_district_view_without_location_has_no_agent_marker(tiny_city):
    env = MapObservation(RecordingEnv(city=tiny_city), size=64, show_location=False, markers="task")
    obs, _ = env.reset(seed=0)
    assert env.view == "district"
    x0, y0, x1, y1 = tiny_city.bounds
    center, mpp, _ = env.window()
    assert center == pytest.approx(((x0 + x1) / 2, (y0 + y1) / 2))
    assert mpp == pytest.approx(max(x1 - x0, y1 - y0) * 1.04 / 64)
    assert colour_pixels(obs["map"], STYLE["agent_fill"]) == 0
    assert colour_pixels(obs["map"], STYLE["goal"]) > 0  # task markers stay
    # the same district map with location information shows the agent
    with_agent = MapObservation(
        RecordingEnv(city=tiny_city), size=64, view="district", markers="task"
    )
    obs2, _ = with_agent.reset(seed=0)
    assert colour_pixels(obs2["map"], STYLE["agent_fill"]) > 0


def test_grid_overlay_and_switching_off(tiny_city):
    env = MapObservation(RecordingEnv(city=tiny_city), size=96, view="district", grid=True)
    obs, _ = env.reset(seed=0)
    plain = MapObservation(RecordingEnv(city=tiny_city), size=96, view="district")
    obs_plain, _ = plain.reset(seed=0)
    assert (obs["map"] != obs_plain["map"]).any()  # grid lines and labels drawn
    off = MapObservation(RecordingEnv(city=tiny_city), enabled=False)
    obs_off, _ = off.reset(seed=0)
    assert "map" not in obs_off and "map" not in off.observation_space.spaces


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped")
def test_check_env_and_bad_arguments(tiny_city):
    check_env(MapObservation(RecordingEnv(city=tiny_city), size=32), skip_render_check=True)
    with pytest.raises(UrbanGymError, match="view='sky'"):
        MapObservation(RecordingEnv(city=tiny_city), view="sky")
    with pytest.raises(UrbanGymError, match="metres_per_pixel=0"):
        MapObservation(RecordingEnv(city=tiny_city), metres_per_pixel=0)


class RevealingEnv(RecordingEnv):
    """A recording env that lets the agent see its goal on a map in navigate tasks only."""

    def map_markers(self):
        from urban_gym.render import MapMarkers

        if self.task_kind == "navigate":
            return MapMarkers(goal=(self.task.goal["x"], self.task.goal["y"]))
        return MapMarkers()


def test_markers_are_the_envs_call_not_the_task_files(tiny_city):
    kw = dict(size=64, view="district")
    goal = STYLE["goal"]
    # an env without map_markers() shows no task markers: the goal stays privileged
    plain, _ = MapObservation(RecordingEnv(city=tiny_city), **kw).reset(seed=0)
    assert colour_pixels(plain["map"], goal) == 0
    # the env decides: the goal of a navigate task, nothing for a question about it
    nav, _ = MapObservation(RevealingEnv(city=tiny_city), **kw).reset(seed=0)
    assert colour_pixels(nav["map"], goal) > 0
    q, _ = MapObservation(RevealingEnv(city=tiny_city, task="question"), **kw).reset(seed=0)
    assert colour_pixels(q["map"], goal) == 0
    # markers="task" is the privileged view for a person watching
    every, _ = MapObservation(
        RevealingEnv(city=tiny_city, task="question"), markers="task", **kw
    ).reset(seed=0)
    assert colour_pixels(every["map"], goal) > 0
    with pytest.raises(UrbanGymError, match="markers='all'"):
        MapObservation(RecordingEnv(city=tiny_city), markers="all")
