"""One ``info`` schema on every registered id (:mod:`urban_gym.envs.info`): the same keys,
with the same types, after ``reset`` and after every ``step`` -- valid, masked-out,
out-of-range, structured and unreadable actions alike -- and the end keys on the last step;
every id's class is an ``UrbanEnv`` of a registered family."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

from tests.reliability.small import IDS, make_small
from urban_gym.envs.actions import UnreadableReply
from urban_gym.envs.base import INVALID_ACTION_REWARD, UrbanEnv
from urban_gym.envs.info import (
    END_KEYS,
    STEP_KEYS,
    InfoSchemaError,
    check_info,
    schema_problems,
)
from urban_gym.tasks.families import FAMILIES, env_specs, load_entry

ENV_SPECS = env_specs()


def actions(env, obs, rng: np.random.Generator):
    """Mostly valid masked indices; some masked-out and out-of-range indices, structured
    examples, and unreadable replies."""
    u = rng.random()
    n = int(env.action_space.n)
    if u < 0.65:
        return int(rng.choice(np.flatnonzero(obs["action_mask"])))
    if u < 0.75:
        return int(rng.integers(-2, n + 2))
    if u < 0.9:
        examples = env.unwrapped.action_set.examples()
        return examples[int(rng.integers(len(examples)))]
    return UnreadableReply("your reply could not be read: no JSON object")


@pytest.mark.parametrize("env_id", IDS)
def test_schema_after_reset_and_every_step(env_id):
    env = make_small(env_id, images=False)
    rng = np.random.default_rng(1)
    obs, info = env.reset(seed=0)
    check_info(info)
    assert info["steps"] == 0 and info["invalid_actions"] == 0 and info["action_valid"]
    ends = steps = unreadable = 0
    for _ in range(320):
        a = actions(env, obs, rng)
        obs, reward, terminated, truncated, info = env.step(a)
        steps += 1
        end = terminated or truncated
        check_info(info, end=end)
        assert info["task_id"] == env.unwrapped.task.id and info["steps"] == steps
        if isinstance(a, UnreadableReply):
            unreadable += 1
            assert not info["action_valid"] and info["invalid_action"] == a.message
            if not end:
                assert reward == INVALID_ACTION_REWARD
        if end:
            ends += 1
            assert info["is_success"] == (info["metrics"].get("success", 0.0) >= 1.0)
            obs, info = env.reset(seed=ends)
            check_info(info)
            steps = 0
    assert ends >= 1 and unreadable >= 3
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_every_id_is_an_urban_env_of_a_registered_family(env_id):
    cls = load_entry(ENV_SPECS[env_id][0])
    assert issubclass(cls, UrbanEnv) and cls.family in FAMILIES
    assert FAMILIES[cls.family].env_class() is cls and env_id in FAMILIES[cls.family].env_ids


def test_distance_is_a_float_everywhere_and_inf_without_a_goal():
    """Question tasks have no goal position: ``inf`` (never None or absent, which would
    break vector envs); navigation tasks report metres."""
    env = make_small("UrbanGym/PoseGraph360-Procedural-v0")
    u = env.unwrapped
    kinds = {}
    for i, t in enumerate(u.tasks):
        _, info = env.reset(seed=0, options={"task_index": i})
        kinds.setdefault(t.type, info["distance_to_goal_m"])
    assert math.isinf(kinds["localization"]) and math.isinf(kinds["object_count"])
    assert 0.0 < kinds["map_navigation"] < math.inf and 0.0 < kinds["vln"] < math.inf


def test_vector_env_batches_the_schema():
    """A vector env whose sub-envs run a question task and a navigation task batches every
    schema key: the distance is inf in one and metres in the other."""
    kw = {"view_size": 16, "pano_width": 128}
    env = gym.vector.SyncVectorEnv(
        [
            lambda: gym.make(
                "UrbanGym/PoseGraph360-Procedural-v0", task_types=["localization"], **kw
            ),
            lambda: gym.make(
                "UrbanGym/PoseGraph360-Procedural-v0", task_types=["map_navigation"], **kw
            ),
        ]
    )
    _, info = env.reset(seed=0)
    for key in STEP_KEYS:
        assert key in info, key
    _, _, _, _, info = env.step(np.array([0, 0]))
    d = info["distance_to_goal_m"]
    assert d.dtype == np.float64 and math.isinf(d[0]) and 0.0 < d[1] < math.inf
    assert info["steps"].tolist() == [1, 1] and info["pose"]["heading"].dtype == np.float64
    env.close()


def test_the_checker_names_what_is_wrong():
    good = {
        "pose": {"x": 1.0, "y": 2.0, "heading": 90.0},
        "distance_to_goal_m": math.inf,
        "steps": 3,
        "invalid_actions": 0,
        "action_valid": True,
        "invalid_action": "",
        "task_id": "t",
    }
    check_info(good)
    assert schema_problems(good, end=True) == [f"missing {k!r}" for k in END_KEYS]
    bad = {**good, "distance_to_goal_m": None, "pose": {"x": 1.0, "y": 2.0, "heading": 360.0}}
    with pytest.raises(InfoSchemaError, match="distance_to_goal_m' is NoneType, not float"):
        check_info(bad)
    assert "pose['heading'] = 360.0 is not in [0, 360)" in schema_problems(bad)
    assert schema_problems({**good, "action_valid": False}) == [
        "an invalid step must say why in invalid_action"
    ]
