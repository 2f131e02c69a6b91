"""The native batched vector env (``gym.make_vec(id, num_envs=N)``, registered as every
family's ``vector_entry_point``) against N single envs with the same seeds.

The rollouts run seeded masked random actions over 60 steps with short episodes, so every
env ends and restarts episodes several times; the vector env's observations (images and
texts), rewards, terminations, truncations and info must equal, step for step, what N single
envs give with Gymnasium's ``next_step`` autoreset spelled out by hand: the step after an
episode's end resets that env (no seed) and returns its first observation, reward 0,
neither terminated nor truncated.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from tests.reliability.small import ENV_SPECS, IDS, family, small_kwargs
from urban_gym.envs.vector import NativeVectorEnv, batch_infos
from urban_gym.errors import UrbanGymError
from urban_gym.tasks.families import family_of_id, load_entry

N = 3
STEPS = 60
#: family -> kwargs that make its episodes short enough to end within the rollout
_SHORT: dict[str, dict[str, Any]] = {"streetgraph": {"max_decisions": 6}}


#: the ids, those whose procedural world takes a test past ~20 s marked slow
PARAMS = [pytest.param(i, marks=pytest.mark.slow) if "Procedural" in i else i for i in IDS]


def _kwargs(env_id: str) -> dict[str, Any]:
    return {**ENV_SPECS[env_id][1], **small_kwargs(env_id), **_SHORT.get(family(env_id), {})}


def _single(env_id: str) -> gym.Env:
    return load_entry(family_of_id(env_id).env_entry)(**_kwargs(env_id))


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b)
    return bool(a == b)


def _masked(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


@pytest.mark.parametrize("env_id", PARAMS)
def test_make_vec_returns_the_native_vector_env_by_default(env_id):
    v = gym.make_vec(env_id, num_envs=2, **small_kwargs(env_id))
    try:
        assert isinstance(v, NativeVectorEnv)
        assert v.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
        # the mode Gymnasium's own SyncVectorEnv uses by default, which this one matches
        sync = gym.make_vec(env_id, num_envs=1, vectorization_mode="sync", **small_kwargs(env_id))
        assert sync.metadata["autoreset_mode"] == v.metadata["autoreset_mode"]
        sync.close()
    finally:
        v.close()


@pytest.mark.parametrize("env_id", PARAMS)
def test_the_vector_env_equals_n_single_envs_over_episodes_with_resets(env_id):
    kw = _kwargs(env_id)
    v = gym.make_vec(env_id, num_envs=N, threads=2, **{k: kw[k] for k in kw})
    singles = [_single(env_id) for _ in range(N)]
    rng = np.random.default_rng(5)
    try:
        obs, info = v.reset(seed=11)
        pairs = [s.reset(seed=11 + i) for i, s in enumerate(singles)]
        for i, (o, inf) in enumerate(pairs):
            assert _equal({k: x[i] for k, x in obs.items()}, o)
            assert info["task_id"][i] == inf["task_id"]
        ended = np.zeros(N, bool)
        ends = 0
        for _ in range(STEPS):
            masks = v.action_masks()
            assert masks.shape == (N, v.single_action_space.n) and masks.dtype == bool
            for i, s in enumerate(singles):
                assert np.array_equal(masks[i], s.action_masks())
            a = _masked(rng, masks)
            obs, rew, term, trunc, info = v.step(a)
            assert v.observation_space.contains(obs)
            for i, s in enumerate(singles):
                if ended[i]:
                    o, inf = s.reset()
                    r, te, tr = 0.0, False, False
                else:
                    o, r, te, tr, inf = s.step(int(a[i]))
                assert _equal({k: x[i] for k, x in obs.items()}, o), (env_id, i)
                assert (rew[i], term[i], trunc[i]) == (r, te, tr)
                assert info["steps"][i] == inf["steps"]
                assert info["pose"]["x"][i] == inf["pose"]["x"]
                assert info["task_id"][i] == inf["task_id"]
                assert bool(info.get("_is_success", np.zeros(N, bool))[i]) == ("is_success" in inf)
                if "is_success" in inf:
                    assert info["is_success"][i] == inf["is_success"]
                    assert _equal(info["metrics"]["_" + next(iter(inf["metrics"]))][i], True)
            ended = term | trunc
            ends += int(ended.sum())
        assert ends >= 2 * N  # the rollout did cover resets
    finally:
        v.close()


def test_same_step_autoreset_returns_the_first_observation_and_keeps_the_final_one():
    env_id = "UrbanGym/CityWalk-v0" if "UrbanGym/CityWalk-v0" in IDS else IDS[0]
    kw = _kwargs(env_id)
    v = gym.make_vec(env_id, num_envs=2, autoreset_mode="same_step", threads=1, **kw)
    singles = [_single(env_id) for _ in range(2)]
    rng = np.random.default_rng(1)
    try:
        v.reset(seed=3)
        for i, s in enumerate(singles):
            s.reset(seed=3 + i)
        seen = 0
        for _ in range(STEPS):
            a = _masked(rng, v.action_masks())
            obs, rew, term, trunc, info = v.step(a)
            for i, s in enumerate(singles):
                o, r, te, tr, inf = s.step(int(a[i]))
                assert rew[i] == r and term[i] == te and trunc[i] == tr
                if te or tr:
                    seen += 1
                    assert info["_final_obs"][i] and info["_final_info"][i]
                    assert _equal(info["final_obs"][i], o)
                    assert info["final_info"]["task_id"][i] == inf["task_id"]
                    o, inf = s.reset()
                assert _equal({k: x[i] for k, x in obs.items()}, o)
                assert info["steps"][i] == inf["steps"]
        assert seen >= 2
    finally:
        v.close()


def test_reset_mask_resets_only_the_masked_envs():
    env_id = IDS[0]
    v = gym.make_vec(env_id, num_envs=2, **_kwargs(env_id))
    try:
        v.reset(seed=0)
        v.step(_masked(np.random.default_rng(0), v.action_masks()))
        _, info = v.reset(options={"reset_mask": np.array([False, True])})
        assert list(info["_steps"]) == [False, True] and info["steps"][1] == 0
        assert v.get_attr("steps") == (1, 0)
        with pytest.raises(UrbanGymError, match="reset_mask"):
            v.reset(options={"reset_mask": [True, True]})
    finally:
        v.close()


def test_bad_arguments_are_named():
    env_id = IDS[0]
    with pytest.raises(UrbanGymError, match="num_envs=0"):
        gym.make_vec(env_id, num_envs=0)
    with pytest.raises(UrbanGymError, match="autoreset_mode='later'"):
        gym.make_vec(env_id, num_envs=1, autoreset_mode="later")
    with pytest.raises(UrbanGymError, match="threads=-1"):
        gym.make_vec(env_id, num_envs=1, threads=-1)


def test_batch_infos_has_gymnasiums_layout():
    """Two envs, the second without ``extra``, an ``is_success`` only on the first: every
    key an array over the envs with its ``_key`` mask, nested dicts likewise -- the layout
    Gymnasium's own vector envs build one env at a time."""
    infos = [
        {"steps": 3, "pose": {"x": 1.5}, "extra": "a", "is_success": True},
        {"steps": 4, "pose": {"x": -2.0}},
    ]
    out = batch_infos(infos)
    assert out["steps"].tolist() == [3, 4] and out["_steps"].tolist() == [True, True]
    assert out["pose"]["x"].tolist() == [1.5, -2.0] and out["_pose"].tolist() == [True, True]
    assert out["extra"].tolist() == ["a", None] and out["_extra"].tolist() == [True, False]
    assert out["is_success"].tolist() == [True, False]
    assert out["_is_success"].tolist() == [True, False]
    # the same as Gymnasium's own, one env at a time; with different keys per env (the
    # general path) and with the same keys on every env (the fast path)
    same = [
        {"steps": 3, "pose": {"x": 1.5}, "ok": True},
        {"steps": 4, "pose": {"x": -2.0}, "ok": False},
    ]
    sync = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
    for case in (infos, same):
        ref: dict[str, Any] = {}
        for i, info in enumerate(case):
            ref = sync._add_info(ref, info, i)
        got = {k: v for k, v in batch_infos(case).items() if k != "extra"}
        assert _equal(got, {k: v for k, v in ref.items() if k != "extra"})
        assert all(got[k].dtype == ref[k].dtype for k in got if k != "pose")
    sync.close()
