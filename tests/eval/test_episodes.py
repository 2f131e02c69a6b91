import gymnasium as gym
import pytest

import urban_gym  # noqa: F401
from urban_gym.eval.episodes import make_policy, run_episode


def test_oracle_episode_on_a_procedural_streetgraph():
    env = gym.make("UrbanGym/StreetGraph-Procedural-v0", observation="symbolic").unwrapped
    info = run_episode(env, "oracle", task_index=0, seed=0)
    assert info["termination"] == "arrived" and info["is_success"]
    assert info["metrics"]["spl"] == pytest.approx(1.0)


def test_random_agent_is_seeded_and_unknown_agents_are_named():
    env = gym.make("UrbanGym/StreetGraph-Procedural-v0", observation="symbolic").unwrapped
    a = run_episode(env, "random", task_index=1, seed=3)
    b = run_episode(env, "random", task_index=1, seed=3)
    assert a["metrics"] == b["metrics"]
    env.reset(seed=0)
    with pytest.raises(ValueError, match="agent='human'"):
        make_policy(env, "human", 0)
