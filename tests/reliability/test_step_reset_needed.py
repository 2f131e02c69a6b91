"""``step`` before the first ``reset`` or after the episode ended raises
``gymnasium.error.ResetNeeded`` on every family (the bare env, without Gymnasium's
``OrderEnforcing`` wrapper), also after a pickle round trip."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from gymnasium.error import ResetNeeded

from tests.reliability.small import IDS, make_small


def finish_episode(env, seed: int = 0, limit: int = 2000) -> dict:
    """Reset, then take random valid (masked) actions until the episode ends; the last info."""
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(limit):
        obs, _, terminated, truncated, info = env.step(
            int(rng.choice(np.flatnonzero(obs["action_mask"])))
        )
        if terminated or truncated:
            return info
    raise AssertionError(f"no episode end within {limit} steps")


@pytest.mark.parametrize("env_id", IDS)
def test_step_before_reset_and_after_the_end_raises_reset_needed(env_id):
    env = make_small(env_id, images=False).unwrapped
    for action in (0, {"action": "nonsense"}):
        with pytest.raises(ResetNeeded, match=r"before reset\(\) or after the episode ended"):
            env.step(action)
    fresh = pickle.loads(pickle.dumps(env))
    with pytest.raises(ResetNeeded):
        fresh.step(0)

    info = finish_episode(env)
    assert "termination" in info
    with pytest.raises(ResetNeeded):
        env.step(0)
    ended = pickle.loads(pickle.dumps(env))
    with pytest.raises(ResetNeeded):
        ended.step(0)

    obs, _ = env.reset(seed=1)  # a new episode steps again
    _, _, _, _, info = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert info["action_valid"] is True
    env.close()
