"""Every ``info`` value keeps one type on every id, after reset and on
every step (valid, masked-out, out-of-range and unreadable actions, episode ends). Vector
envs batch each info key into an array typed by the first value they see; a key that is
``None`` on one step and an ``int`` or a ``dict`` on the next crashes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from tests.reliability.small import IDS, make_small


def record_types(info: Mapping[str, Any], seen: dict, where: str, prefix: tuple = ()) -> None:
    """Add the type of every value in ``info`` (nested dicts key by key) to ``seen``:
    key path -> {type name: first place it was seen}."""
    for k, v in info.items():
        path = (*prefix, k)
        seen.setdefault(path, {}).setdefault(type(v).__name__, where)
        if isinstance(v, dict):
            record_types(v, seen, where, path)


def random_action(env, obs, rng: np.random.Generator) -> Any:
    """Mostly valid masked indices, some masked-out or out-of-range indices, structured
    examples and unreadable actions."""
    u = rng.random()
    n = int(env.action_space.n)
    if u < 0.7:
        return int(rng.choice(np.flatnonzero(obs["action_mask"])))
    if u < 0.8:
        return int(rng.integers(-2, n + 2))
    if u < 0.95:
        examples = env.unwrapped.action_set.examples()
        return examples[int(rng.integers(len(examples)))]
    return {"action": "fly", "height": 3}


@pytest.mark.parametrize("env_id", IDS)
def test_every_info_value_keeps_one_type(env_id):
    env = make_small(env_id, images=False)
    rng = np.random.default_rng(0)
    seen: dict = {}
    episode = 0
    obs, info = env.reset(seed=0)
    record_types(info, seen, "reset 0")
    ends = 0
    for t in range(400):
        obs, _, terminated, truncated, info = env.step(random_action(env, obs, rng))
        record_types(info, seen, f"step {t}")
        if terminated or truncated:
            ends += 1
            episode += 1
            obs, info = env.reset(seed=episode)
            record_types(info, seen, f"reset {episode}")
    mixed = {".".join(map(str, k)): v for k, v in seen.items() if len(v) > 1}
    assert not mixed, f"info values that change type: {mixed}"
    assert ends >= 2  # the end-of-episode keys (termination, metrics) were seen too
    assert ("action_valid",) in seen and ("invalid_action",) in seen
    env.close()
