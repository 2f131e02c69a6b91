"""stable-baselines3 through the native batched vector env (:mod:`urban_gym.baselines.vec_env`)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from urban_gym.baselines.vec_env import NativeSB3VecEnv, make_native_vec_env  # noqa: E402
from urban_gym.errors import UrbanGymError  # noqa: E402

CITYWALK = "UrbanGym/CityWalk-v0"


def test_the_adapter_drops_text_and_hands_over_ended_episodes():
    venv = make_native_vec_env(CITYWALK, 2, view_size=16)
    inner = venv.venv
    assert isinstance(inner, NativeSB3VecEnv)
    try:
        assert set(venv.observation_space.spaces) == {"view", "action_mask"}
        venv.seed(4)
        obs = venv.reset()
        assert obs["view"].shape == (2, 16, 16, 3) and obs["action_mask"].shape == (2, 26)
        rng = np.random.default_rng(0)
        ended = 0
        for _ in range(60):
            masks = np.stack(venv.env_method("action_masks"))
            assert masks.shape == (2, 26) and masks.dtype == bool
            obs, rew, dones, infos = venv.step(
                np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            )
            assert rew.dtype == np.float32 and dones.shape == (2,)
            for i in np.flatnonzero(dones):
                ended += 1
                info = infos[i]
                assert info["terminal_observation"]["view"].shape == (16, 16, 3)
                assert "termination" in info and "episode" in info
                # the env is already reset: its step counter starts again
                assert inner.venv.envs[i].steps == 0
        assert ended >= 2
    finally:
        venv.close()


def test_the_adapter_needs_same_step_autoreset():
    v = gym.make_vec(CITYWALK, num_envs=1, view_size=16)
    try:
        with pytest.raises(UrbanGymError, match="same_step"):
            NativeSB3VecEnv(v)
    finally:
        v.close()


def test_maskable_ppo_trains_on_citywalk_84x84_through_the_native_vector_env():
    import torch
    from sb3_contrib import MaskablePPO
    from torch.nn.utils import parameters_to_vector

    torch.set_num_threads(1)
    venv = make_native_vec_env(CITYWALK, 4, view_size=84)
    try:
        model = MaskablePPO(
            "MultiInputPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu"
        )
        before = parameters_to_vector(model.policy.parameters()).detach().clone()
        model.learn(total_timesteps=128)
        after = parameters_to_vector(model.policy.parameters()).detach()
        assert model.num_timesteps == 128  # 4 envs x 32 steps
        assert float((after - before).norm()) > 0.0  # one update changed the policy
    finally:
        venv.close()


def test_the_adapter_over_worker_processes_equals_the_one_process_adapter():
    """4 envs in 2 worker processes against the same 4 in one process through the adapter:
    observations, rewards, dones, ended episodes' infos and terminal observations equal;
    attributes and methods reach the envs asked for, in the order asked."""
    one = make_native_vec_env(CITYWALK, 4, view_size=16, max_steps=6)
    two = make_native_vec_env(CITYWALK, 4, workers=2, view_size=16, max_steps=6)
    try:
        one.seed(9)
        two.seed(9)
        o1, o2 = one.reset(), two.reset()
        assert all(np.array_equal(o1[k], o2[k]) for k in o1)
        rng = np.random.default_rng(2)
        ended = 0
        for _ in range(24):
            masks = np.stack(one.env_method("action_masks"))
            assert np.array_equal(np.stack(two.env_method("action_masks")), masks)
            a = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            (o1, r1, d1, i1), (o2, r2, d2, i2) = one.step(a), two.step(a)
            assert all(np.array_equal(o1[k], o2[k]) for k in o1)
            assert np.array_equal(r1, r2) and np.array_equal(d1, d2)
            for i in np.flatnonzero(d1):
                ended += 1
                for key in ("termination", "is_success", "TimeLimit.truncated"):
                    assert i1[i][key] == i2[i][key], key
                # VecMonitor's episode return and length (its "t" is wall-clock time)
                assert [i1[i]["episode"][k] for k in "rl"] == [i2[i]["episode"][k] for k in "rl"]
                t1, t2 = i1[i]["terminal_observation"], i2[i]["terminal_observation"]
                assert np.array_equal(t1["view"], t2["view"])
        assert ended >= 4
        assert two.get_attr("steps", indices=[3, 0]) == one.get_attr("steps", indices=[3, 0])
        two.set_attr("probe", 5, indices=[1, 2])
        assert two.get_attr("probe", indices=[2, 1]) == [5, 5]
        assert two.env_method("action_masks", indices=[2])[0].shape == (26,)
    finally:
        one.close()
        two.close()
