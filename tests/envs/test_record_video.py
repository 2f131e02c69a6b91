"""Gymnasium's ``RecordVideo`` on one id per family: an episode becomes an MP4 file whose
frames are the env's ``render()`` frames (needs the ``eval`` extra: moviepy, imageio-ffmpeg)."""

from __future__ import annotations

import gymnasium as gym
import imageio.v3 as iio
import numpy as np
import pytest
from gymnasium.wrappers import RecordVideo

import urban_gym  # noqa: F401  (registers the ids)

# small views keep the panoramas and first-person renders quick
CASES = {
    "UrbanGym/PoseGraph360-v0": {"view_size": 32, "pano_width": 256},
    "UrbanGym/StreetGraph-v0": {"observation": "symbolic"},
    "UrbanGym/CityWalk-v0": {"view_size": 32, "render_size": 96},
}
STEPS = 6


@pytest.mark.parametrize("env_id", list(CASES))
def test_record_video_writes_the_episode(env_id, tmp_path, helsinki):
    folder = tmp_path / "videos"
    env = RecordVideo(
        gym.make(env_id, render_mode="rgb_array", **CASES[env_id]),
        video_folder=str(folder),
        episode_trigger=lambda episode: episode == 0,
        disable_logger=True,
    )
    obs, _ = env.reset(seed=0)
    size = env.render().shape
    rng = np.random.default_rng(0)
    options = set()  # StreetGraph: the numbers of options met, which its frame must outlast
    for _ in range(STEPS):
        if "StreetGraph" in env_id:  # a random street out of each intersection
            options.add(len(env.unwrapped.options))
            action = rng.integers(len(env.unwrapped.options))
        else:
            action = np.flatnonzero(obs["action_mask"])[0]
        obs, _, term, trunc, _ = env.step(int(action))
        assert not (term or trunc)
    env.close()  # ends the recording: the file is written now
    if "StreetGraph" in env_id:
        assert len(options) >= 2  # the walk met intersections of different sizes

    video = folder / "rl-video-episode-0.mp4"
    assert [p.name for p in folder.iterdir()] == [video.name]
    assert video.stat().st_size > 1000
    frames = list(iio.imiter(video, plugin="FFMPEG"))
    # one frame after the reset and one per step, each the size of render()'s frame
    assert len(frames) == STEPS + 1
    assert all(f.shape == size for f in frames)
    assert frames[0].std() > 10  # a picture, not a blank clip
