"""The RL face on the recording envs."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

from tests.wrappers.recording_env import RecordingEnv, RecordingGraphEnv
from urban_gym.errors import UrbanGymError
from urban_gym.wrappers.rl import (
    DropTextObservation,
    EncodeTextObservation,
    ExposeActionMask,
    ResizeImageObservation,
    hash_words,
    make_rl_env,
)

pytestmark = pytest.mark.filterwarnings("ignore:.*different from the unwrapped")


def test_drop_text_keeps_images_and_mask():
    env = DropTextObservation(RecordingEnv())
    assert set(env.observation_space.spaces) == {"view", "action_mask"}
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"view", "action_mask"}
    check_env(env, skip_render_check=True)


def test_encode_text_is_a_hashed_bag_of_words():
    v = hash_words("Walk walk to the door", 8)
    assert v.sum() == 5 and v.max() >= 2  # "walk" twice, case-folded
    env = EncodeTextObservation(RecordingEnv(), dim=16)
    obs, _ = env.reset(seed=0)
    assert obs["instruction"].shape == (16,) and obs["instruction"].dtype == np.float32
    # "Walk to the place at cell x:3 y:0 and stop there." has 13 words (x, 3, y, 0 count)
    assert env.unwrapped.task.instruction == "Walk to the place at cell x:3 y:0 and stop there."
    assert obs["instruction"].sum() == 13
    check_env(env, skip_render_check=True)


def test_resize_single_images_and_tile_stacks():
    env = ResizeImageObservation(DropTextObservation(RecordingEnv()), (12, 10))
    obs, _ = env.reset(seed=0)
    assert obs["view"].shape == (10, 12, 3) and env.observation_space["view"].shape == (10, 12, 3)
    # constant images stay constant after resizing
    assert (obs["view"] == obs["view"][0, 0]).all()
    g = ResizeImageObservation(DropTextObservation(RecordingGraphEnv()), (8, 8))
    obs, _ = g.reset(seed=0)
    assert obs["views"].shape == (8, 16, 3)  # two 8x8 views side by side
    check_env(g, skip_render_check=True)


def test_action_masks_follow_the_observation():
    env = make_rl_env(RecordingEnv(), image_size=(16, 16))
    obs, _ = env.reset(seed=0)
    u = env.unwrapped
    m = env.action_masks()
    assert m.dtype == bool and (m == (obs["action_mask"] > 0)).all()
    # at the west edge the west move is masked out
    u.pos = (0, 2)
    obs, *_ = env.step(4)
    assert not env.action_masks()[3] and env.action_masks()[1]
    assert isinstance(env.observation_space, spaces.Dict)
    assert not any(isinstance(s, spaces.Text) for s in env.observation_space.spaces.values())


def test_bad_setups_are_clear_errors():
    with pytest.raises(UrbanGymError, match="size="):
        ResizeImageObservation(RecordingEnv(), (0, 4))
    with pytest.raises(UrbanGymError, match="text='keep'"):
        make_rl_env(RecordingEnv(), text="keep")
    assert ExposeActionMask(RecordingEnv()).action_masks().all()


def test_maskable_ppo_runs_on_the_rl_face():
    from urban_gym.baselines.rl import train_maskable_ppo

    model, stats = train_maskable_ppo(
        RecordingEnv(), total_timesteps=256, n_steps=64, batch_size=32, image_size=(36, 36), seed=0
    )
    assert stats["timesteps"] >= 256 and stats["episodes"] >= 1


def test_wrapper_stacks_on_a_registered_env_pass_check_env():
    """check_env re-makes the env from its spec, wrappers included (RecordConstructorArgs)."""
    import gymnasium as gym

    from urban_gym.families.streetgraph.memory import AgentNavMemory
    from urban_gym.wrappers.map_observation import MapObservation

    kw = {"observation": "symbolic"}
    check_env(
        make_rl_env("UrbanGym/StreetGraph-v0", text="encode", env_kwargs=kw), skip_render_check=True
    )
    stack = AgentNavMemory(MapObservation(gym.make("UrbanGym/StreetGraph-v0", **kw), size=32))
    check_env(stack, skip_render_check=True)
    assert [w.name for w in stack.spec.additional_wrappers][-2:] == [
        "MapObservation",
        "AgentNavMemory",
    ]
