"""``env.render()`` of each family: the frame's layout (sizes worked out from the panels),
that its panels hold the pictures they should, and StreetGraph's size rule (one frame size
per env, shared by the options shown, no empty tile)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import urban_gym  # noqa: F401  (registers the ids)
from tests.families.streetgraph.test_env import fixture_dir, route_task  # noqa: F401
from urban_gym.families.streetgraph.env import FRAME_TILE, StreetGraphEnv
from urban_gym.render import frame as F

WHITE = np.array([255, 255, 255], np.uint8)


def dark_pixels(img: np.ndarray, level: int = 100) -> int:
    return int((img.max(axis=2) < level).sum())


def test_posegraph360_frame_is_view_reference_and_text(helsinki):
    env = gym.make(
        "UrbanGym/PoseGraph360-v0",
        view_size=64,
        pano_width=256,
        task_types=["map_navigation"],
        render_mode="rgb_array",
    ).unwrapped
    obs, _ = env.reset(seed=0)
    frame = env.render()
    # view 64x64 | reference 64x64, over a text panel max(48, 64 // 4) = 48 px tall
    assert frame.shape == (64 + 48, 64 + 64, 3) and frame.dtype == np.uint8
    np.testing.assert_array_equal(frame[:64, :64], obs["view"])
    np.testing.assert_array_equal(frame[:64, 64:], obs["reference"])
    text = frame[64:]
    assert dark_pixels(text[:20]) > 30  # "[step 0] The reference map ..." in black
    assert (text[-3:] == WHITE).all()
    env.step(1)
    assert (env.render()[64:] != text).any()  # the step count moved on
    assert gym.make("UrbanGym/PoseGraph360-v0", view_size=32).unwrapped.render() is None


def test_posegraph360_frame_shows_the_location_prior(helsinki):
    env = gym.make(
        "UrbanGym/PoseGraph360-v0",
        view_size=(96, 64),
        pano_width=256,
        location_prior=True,
        map_size=128,
        render_mode="rgb_array",
    ).unwrapped
    obs, _ = env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (64 + 48, 96 + 64, 3)
    # the prior map drawn at the view's height (the observation's is 128 px)
    np.testing.assert_array_equal(frame[:64, 96:], env._prior_map(size=64))
    assert frame[:64, 96:].std() > 10 and obs["map"].shape == (128, 128, 3)


def test_streetgraph_frame_keeps_one_size_and_shares_it_among_the_options(fixture_dir):  # noqa: F811
    # the route graph of the fixture is not pruned: X has 3 options (c1 north, a1 east,
    # g1 south) and a1 has 2 (east, west), of the action table's max_degree = 4 heads
    env = StreetGraphEnv(
        tasks=[route_task(fixture_dir, ["X", "a1", "a2", "a3", "Y"], images=True)],
        image_size=32,
        render_mode="rgb_array",
    )
    obs, _ = env.reset(seed=0)
    assert env.max_degree == 4 and obs["action_mask"][:4].tolist() == [1, 1, 1, 0]
    frame = env.render()
    # 4 * 160 = 640 px wide whatever the options; the 3 options share it: tiles 0-213,
    # 213-426, 426-640 px, 160 px tall, over 48 + 22 px of text
    assert frame.shape == (FRAME_TILE + 48 + 22, 4 * FRAME_TILE, 3)
    for i, (a, b) in enumerate([(0, 213), (213, 426), (426, 640)]):
        tile = frame[2 : FRAME_TILE - 22, a + 2 : b - 2]
        # the option's own view, kept in proportion: a 32 px square scaled to cover
        # (b - a - 4) x 156 px, its middle rows shown
        expect = F.cover(obs["views"][i], b - a - 4, FRAME_TILE - 4)[: FRAME_TILE - 24]
        assert np.abs(tile.astype(int) - expect).mean() < 2
    env.step(1)  # to a1: 2 options, 320 px each, and still 640 px in all
    assert len(env.options) == 2
    frame = env.render()
    assert frame.shape == (FRAME_TILE + 70, 4 * FRAME_TILE, 3)
    # no empty panel where the 3rd and 4th options would be: every 160 px column of the
    # tile row shows a view (the fixture's images are colour gradients, never the grey)
    bg = np.array([32, 32, 36], np.uint8)
    for c in range(4):
        column = frame[2 : FRAME_TILE - 22, c * FRAME_TILE : (c + 1) * FRAME_TILE]
        assert (np.abs(column.astype(int) - bg).sum(axis=2) > 30).mean() > 0.9


def test_streetgraph_frame_without_images_draws_a_dial_per_option(fixture_dir):  # noqa: F811
    env = StreetGraphEnv(
        tasks=[route_task(fixture_dir, ["X", "a1", "a2", "a3", "Y"])],
        observation="symbolic",
        render_mode="rgb_array",
    )
    obs, _ = env.reset(seed=0)
    frame = env.render()
    assert frame.shape[1] == 4 * FRAME_TILE
    needle = (frame == np.array([250, 200, 60], np.uint8)).all(axis=2)
    # each dial sits in the middle of its option's third of the 640 px (centres at 106,
    # 319 and 533 px); its needle (80 px from the centre to a ring of radius 66) points
    # along the option's bearing (27, 90 and 104 degrees): its middle is on it, the
    # opposite is not
    c, half = FRAME_TILE // 2, 33
    for x, b in zip([106, 319, 533], np.radians(obs["bearings"][:3])):
        dx, dy = half * np.sin(b), -half * np.cos(b)
        assert needle[round(c + dy), round(x + dx)] and not needle[round(c - dy), round(x - dx)]


def test_streetgraph_frame_size_is_constant_in_helsinki():
    env = gym.make("UrbanGym/StreetGraph-v0", observation="symbolic", render_mode="rgb_array")
    obs, _ = env.reset(seed=0)
    width = FRAME_TILE * env.unwrapped.max_degree
    counts = set()
    rng = np.random.default_rng(0)
    for _ in range(30):
        frame = env.render()
        k = len(env.unwrapped.options)
        counts.add(k)
        assert frame.shape == (FRAME_TILE + 70, width, 3)
        # one needle per option shown, in the middle of its share of the width
        needle = (frame[:FRAME_TILE] == np.array([250, 200, 60], np.uint8)).all(axis=2)
        for i in range(k):
            mid = (width * i // k + width * (i + 1) // k) // 2
            assert needle[:, mid - 70 : mid + 70].any(), (k, i)
        valid = np.flatnonzero(obs["action_mask"])
        obs, _, term, trunc, _ = env.step(int(rng.choice(valid)))
        if term or trunc:
            obs, _ = env.reset()
    assert len(counts) >= 2  # nodes with different numbers of options, one frame size


def test_citywalk_frame_is_view_map_and_text(helsinki):
    env = gym.make(
        "UrbanGym/CityWalk-v0",
        view_size=32,
        render_size=96,
        render_mode="rgb_array",
    ).unwrapped
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (96, 3 * 96, 3) and frame.dtype == np.uint8
    view, mp, text = frame[:, :96], frame[:, 96:192], frame[:, 192:]
    assert view.std() > 10 and mp.std() > 10  # a street and a map, not a blank square
    np.testing.assert_array_equal(mp, env._map_image(96))
    # the text panel: white, with the task line at the top in dark ink
    assert (text[-4:] == WHITE).all() and dark_pixels(text[:8]) > 10
    assert (text[:, :3] == WHITE).all()  # the 4 px left margin (glyph edges may touch it)


@pytest.mark.parametrize(
    "env_id", ["UrbanGym/PoseGraph360-v0", "UrbanGym/StreetGraph-v0", "UrbanGym/CityWalk-v0"]
)
def test_gymnasium_collects_the_frames_from_render(env_id, helsinki):
    # what RecordVideo does, without a video encoder: one render() frame per reset and step
    kw = {"view_size": 32} if "StreetGraph" not in env_id else {"observation": "symbolic"}
    env = gym.wrappers.RenderCollection(gym.make(env_id, render_mode="rgb_array", **kw))
    obs, _ = env.reset(seed=0)
    for _ in range(3):
        obs, *_ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    frames = env.render()
    assert len(frames) == 4
    assert all(f.dtype == np.uint8 and f.ndim == 3 and f.shape[2] == 3 for f in frames)
    assert all(f.std() > 10 for f in frames)
    assert len({f.shape for f in frames}) == 1  # one size, as a video encoder needs
