"""The language-model face sees views sized for a model; the RL face keeps its
small ones."""

from __future__ import annotations

import gymnasium as gym

import urban_gym  # noqa: F401  (registers the ids)
from urban_gym.wrappers import lmm_env_kwargs, make_lmm_env, make_rl_env


def test_the_family_views_fill_only_what_is_unset():
    assert lmm_env_kwargs("UrbanGym/CityWalk-v0") == {"view_size": [960, 540]}
    assert lmm_env_kwargs("UrbanGym/PoseGraph360-v0") == {
        "view_size": [768, 768],
        "pano_width": 3072,
    }
    assert lmm_env_kwargs("UrbanGym/StreetGraph-v0") == {"image_size": [512, 512]}
    # the caller's setting wins, the rest is filled in
    assert lmm_env_kwargs("UrbanGym/PoseGraph360-v0", {"view_size": 256}) == {
        "view_size": 256,
        "pano_width": 3072,
    }
    # an id that sets the view itself keeps it: no view, or the small procedural variant
    assert lmm_env_kwargs("UrbanGym/CityWalk-NoView-v0") == {}
    assert lmm_env_kwargs("UrbanGym/PoseGraph360-Procedural-v0", {"suite": "x"}) == {"suite": "x"}


def test_a_panorama_view_is_never_upsampled_from_its_panorama():
    """A 90-degree crop of a W-px panorama spans W/4 panorama pixels: at least the view's
    width."""
    for env_id in ("UrbanGym/PoseGraph360-v0",):
        kw = lmm_env_kwargs(env_id)
        assert kw["pano_width"] / 4 >= kw["view_size"][0]


def test_make_lmm_env_sends_a_960x540_first_person_view_and_the_rl_face_keeps_128():
    lm = make_lmm_env("UrbanGym/CityWalk-v0", memory=None)
    obs, _ = lm.reset(seed=0)
    assert obs["view"].shape == (540, 960, 3)
    assert lm.observation_space["view"].shape == (540, 960, 3)
    assert obs["view"].std() > 10  # a rendered street, not a blank frame
    lm.close()
    rl = make_rl_env("UrbanGym/CityWalk-v0", image_size=None)
    assert rl.observation_space["view"].shape == (128, 128, 3)
    rl.close()
    assert gym.make("UrbanGym/CityWalk-v0").observation_space["view"].shape == (128, 128, 3)


def test_a_given_env_is_used_as_it_is():
    env = gym.make("UrbanGym/CityWalk-v0", view_size=64)
    lm = make_lmm_env(env, memory=None)
    assert lm.observation_space["view"].shape == (64, 64, 3)
    lm.close()
