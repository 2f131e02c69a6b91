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
