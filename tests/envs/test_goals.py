"""Goal modes (``goal=``): every registered id with every mode, the values of each mode
checked by hand, and the clear error of a mode that cannot apply."""

import math
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import urban_gym  # noqa: F401
from urban_gym.envs.goals import (
    GOAL_MODES,
    LANDMARK_COUNT,
    TEXT_DIM,
    GoalModeError,
    farthest_points,
    goal_vector,
    hash_words,
    landmark_code,
)
from urban_gym.tasks.families import env_specs

ENV_SPECS = env_specs()

#: small pictures, so that the registry sweep stays fast
SMALL = {
    "UrbanGym/PoseGraph360-v0": {"view_size": 16, "pano_width": 256},
    "UrbanGym/PoseGraph360-Procedural-v0": {"view_size": 16, "pano_width": 256},
    "UrbanGym/StreetGraph-v0": {"image_size": 16},
    "UrbanGym/StreetGraph-Procedural-v0": {"image_size": 16},
    "UrbanGym/CityWalk-v0": {"view_size": 16},
}
#: the (id, mode) pairs that cannot apply, and why
CANNOT = {
    ("UrbanGym/CityWalk-NoView-v0", "image"): "view_size=None",
    # no panoramas and no New York world to render: symbolic observations
    ("UrbanGym/StreetGraph-Touchdown-v0", "image"): "renders no views",
}
KEY = {"vector": "goal_vector", "landmarks": "goal_landmarks", "image": "goal_image"}
KEY["text"] = "goal_text"


@pytest.mark.parametrize("mode", GOAL_MODES)
@pytest.mark.parametrize("env_id", sorted(ENV_SPECS))
def test_every_id_accepts_every_mode_that_applies(env_id, mode):
    if (env_id, mode) in CANNOT:
        with pytest.raises(GoalModeError) as err:
            gym.make(env_id, goal=mode, **SMALL.get(env_id, {}))
        assert env_id in str(err.value) and f"goal={mode!r}" in str(err.value)
        assert CANNOT[(env_id, mode)] in str(err.value)
        return
    env = gym.make(env_id, goal=mode, **SMALL.get(env_id, {}))
    plain = gym.make(env_id, **SMALL.get(env_id, {}))
    obs, _ = env.reset(seed=1)
    obs_plain, _ = plain.reset(seed=1)
    goal_keys = sorted(k for k in obs if k.startswith("goal_"))
    assert goal_keys == ([] if mode == "none" else [KEY[mode]])
    # the goal entry is added; nothing else changes
    assert set(obs) - set(goal_keys) == set(obs_plain)
    assert env.observation_space.contains(obs)
    a = int(np.flatnonzero(obs["action_mask"])[0])
    obs2, *_ = env.step(a)
    assert env.observation_space.contains(obs2)


@pytest.mark.parametrize("mode", ["vector", "text"])
def test_check_env_passes_with_goal(mode):
    env = gym.make("UrbanGym/StreetGraph-v0", goal=mode, observation="symbolic")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=True)


def test_unknown_mode_names_the_id_and_the_mode():
    with pytest.raises(GoalModeError) as err:
        gym.make("UrbanGym/StreetGraph-v0", goal="pointnav")
    assert "UrbanGym/StreetGraph-v0" in str(err.value) and "'pointnav'" in str(err.value)
    with pytest.raises(GoalModeError, match="observation='symbolic'"):
        gym.make("UrbanGym/StreetGraph-v0", goal="image", observation="symbolic")


def test_goal_vector_by_hand():
    # distance on a log scale: ln(1 + d/10) / ln(1 + 2000/10)
    d100, d50, d30 = (math.log(1 + d / 10) / math.log(201) for d in (100, 50, 30))
    assert math.isclose(d100, 0.45215, abs_tol=1e-5)
    # facing north at the origin, goal 100 m north: straight ahead
    v = goal_vector((0.0, 0.0, 0.0), (0.0, 100.0))
    np.testing.assert_allclose(v, [0, 1, d100, 0, 1, 0, 1, 1], atol=1e-6)
    # facing east, goal 50 m north: 90 degrees to the left
    v = goal_vector((10.0, 10.0, 90.0), (10.0, 60.0))
    np.testing.assert_allclose(v, [-1, 0, d50, 1, 0, 0, 1, 1], atol=1e-6)
    # facing south, goal 30 m east: to the left, compass bearing 90
    v = goal_vector((0.0, 0.0, 180.0), (30.0, 0.0))
    np.testing.assert_allclose(v, [-1, 0, d30, 0, -1, 1, 0, 1], atol=1e-6)
    # no goal place: only the heading
    want = [0, 0, 0, 0, -1, 0, 0, 0]
    np.testing.assert_allclose(goal_vector((0, 0, 180.0), None), want, atol=1e-6)
    assert goal_vector((0, 0, 0), (0, 1e6))[2] == 1.0  # capped


def test_landmark_code_is_a_softmax_peaked_at_the_nearest_landmark():
    marks = np.array([[0.0, 0.0], [100.0, 0.0], [0.0, 300.0]])
    code = landmark_code(marks, (90.0, 0.0))
    assert code.shape == (LANDMARK_COUNT,) and math.isclose(code.sum(), 1.0, rel_tol=1e-6)
    assert int(np.argmax(code)) == 1
    # exp(-90/100) / exp(-10/100) = exp(-0.8) between landmark 0 and 1
    assert math.isclose(code[0] / code[1], math.exp(-0.8), rel_tol=1e-5)
    assert not landmark_code(marks, None).any()


def test_farthest_points_spread_from_the_centre():
    pts = np.array([[0, 0], [1, 0], [10, 0], [0, 10], [5, 5]], dtype=float)
    got = farthest_points(pts, 3, (5.0, 5.0))
    assert got[0].tolist() == [5, 5]  # nearest the centre first
    assert {tuple(p) for p in got[1:]} <= {(0, 0), (10, 0), (0, 10)}


def test_goal_text_is_the_hashed_instruction():
    env = gym.make("UrbanGym/StreetGraph-v0", goal="text", observation="symbolic")
    obs, info = env.reset(seed=0)
    want = hash_words(info["task"].instruction, TEXT_DIM)
    np.testing.assert_array_equal(obs["goal_text"], want)
    assert obs["goal_text"].sum() == len(info["task"].instruction.split())


def test_streetgraph_goal_vector_points_at_the_destination():
    env = gym.make("UrbanGym/StreetGraph-v0", goal="vector", observation="symbolic")
    obs, info = env.reset(seed=4)
    x, y, h = info["pose"]["x"], info["pose"]["y"], info["pose"]["heading"]
    gx, gy = info["task"].goal["position"]
    rel = math.degrees(math.atan2(obs["goal_vector"][0], obs["goal_vector"][1]))
    want = (math.degrees(math.atan2(gx - x, gy - y)) - h + 180) % 360 - 180
    assert math.isclose(rel, want, abs_tol=1e-3)
    d = math.hypot(gx - x, gy - y)
    assert math.isclose(obs["goal_vector"][2], math.log1p(d / 10) / math.log(201), rel_tol=1e-5)
    # it follows the agent
    obs2, *_ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert not np.array_equal(obs2["goal_vector"], obs["goal_vector"])


def test_goal_mode_survives_pickling():
    env = gym.make("UrbanGym/StreetGraph-v0", goal="landmarks", observation="symbolic")
    env.reset(seed=2)
    copy = pickle.loads(pickle.dumps(env.unwrapped))
    a, _ = env.unwrapped.reset(seed=9)
    b, _ = copy.reset(seed=9)
    np.testing.assert_array_equal(a["goal_landmarks"], b["goal_landmarks"])
    assert a["goal_landmarks"].max() > 1.0 / LANDMARK_COUNT  # peaked, not uniform
