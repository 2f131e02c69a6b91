"""``track_visibility``: the privileged ``info["goal_visible"]`` from the renderer's
instance ids (:mod:`urban_gym.envs.visibility`)."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

import urban_gym  # noqa: F401
from tests.reliability.small import IDS, small_kwargs
from urban_gym.envs.info import check_info
from urban_gym.envs.visibility import IdPanoramas, goal_poi_indices, in_view, sign_ids
from urban_gym.render import FirstPersonRenderer
from urban_gym.world import load_city

CITY = "procedural:seed=3,blocks=2x2"


def _named_poi(city):
    """A POI with a name and a building facade (its sign hangs on the facade)."""
    for i, p in enumerate(city.pois):
        if p.name and p.facade is not None:
            return i, p
    raise AssertionError("no named POI on a facade")


def test_a_sign_is_visible_from_its_front_looking_at_it_and_not_looking_away():
    # the POI docstring: a viewer at ``front`` sees the sign by looking along facing + 180
    city = load_city(CITY)
    i, p = _named_poi(city)
    target = sign_ids([i])
    panos = IdPanoramas(city)
    x, y = p.front
    toward, away = (p.facing + 180.0) % 360.0, p.facing % 360.0
    assert in_view(panos.view(x, y, toward, 0.0, 90.0, (96, 96)), target)
    assert not in_view(panos.view(x, y, away, 0.0, 90.0, (96, 96)), target)
    fp = FirstPersonRenderer(city, width=96, height=96, fov=90.0)
    assert in_view(fp.render(x, y, toward, ids=True).ids, target)
    assert not in_view(fp.render(x, y, away, ids=True).ids, target)


def test_in_view_counts_pixels():
    ids = np.zeros((4, 4), np.int32)
    ids[0, :2] = 2_000_005
    t = sign_ids([5])
    assert in_view(ids, t, min_pixels=2) and not in_view(ids, t, min_pixels=3)
    assert not in_view(ids, sign_ids([]), min_pixels=1)


@pytest.mark.parametrize("env_id", IDS)
def test_goal_visible_only_when_asked_and_a_bool_on_every_info(env_id):
    kw = small_kwargs(env_id, images=False)
    off = gym.make(env_id, **kw)
    _, info = off.reset(seed=0)
    assert "goal_visible" not in info
    env = gym.make(env_id, track_visibility=True, **kw)
    obs, info = env.reset(seed=0)
    assert type(info["goal_visible"]) is bool
    rng = np.random.default_rng(0)
    for _ in range(25):
        a = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        obs, _, term, trunc, info = env.step(a)
        check_info(info, end=term or trunc)
        assert type(info["goal_visible"]) is bool
        if term or trunc:
            obs, info = env.reset(seed=1)
    # the env still pickles (the id renderers are dropped and rebuilt on demand)
    clone = pickle.loads(pickle.dumps(env.unwrapped))
    _, info = clone.reset(seed=0)
    assert type(info["goal_visible"]) is bool
    with pytest.raises(Exception, match="track_visibility"):
        gym.make(env_id, track_visibility="yes", **kw)


def test_posegraph_landmark_seen_from_its_reference_view_not_from_behind():
    env = gym.make(
        "UrbanGym/PoseGraph360-v0",
        task_types=["landmark_image"],
        view_size=64,
        pano_width=128,
        track_visibility=True,
    )
    u = env.unwrapped
    from urban_gym.families.posegraph360.world import State

    seen = checked = 0
    for k in range(8):
        env.reset(seed=0, options={"task_index": k})
        v = u.task.goal["view"]
        s = State(int(v["trajectory"]), int(v["frame"]))
        if u.city.building_at(*u.graph.position(s)) is not None:
            continue  # a view point inside a building sees its walls from inside
        checked += 1
        u.state = s
        u.yaw = float(v["bearing"]) - u.graph.heading(u.state)
        u.pitch = 0.0
        front = u._goal_visible()
        u.yaw += 180.0
        behind = u._goal_visible()
        seen += int(front)
        assert not behind, u.task.id
    # the reference photo of a landmark is taken looking at its sign
    assert checked >= 5 and seen == checked


def test_citywalk_visual_recognition_target_in_view_at_the_start():
    env = gym.make("UrbanGym/CityWalk-v0", task_types=["VR"], view_size=32, track_visibility=True)
    _, info = env.reset(seed=0, options={"task_index": 0})
    assert info["goal_visible"]  # a VR question asks about the sign in front of the agent
    for _ in range(2):  # 180 degrees: the sign is behind
        _, _, _, _, info = env.step({"action": "look", "yaw": 90.0})
    assert not info["goal_visible"]
    _, _, _, _, info = env.step({"action": "open_map"})
    assert not info["goal_visible"]  # the map is open: nothing first-person in view


def test_goal_places_of_each_family():
    from urban_gym.tasks.spec import TaskSpec

    city = load_city("helsinki")
    p = city.pois[380]
    nav = TaskSpec.from_dict(
        {
            "id": "t",
            "family": "citywalk",
            "type": "SGN",
            "city": "helsinki",
            "difficulty": "easy",
            "instruction": "go",
            "start": {"x": 0, "y": 0, "heading": 0},
            "goal": {"poi_id": 380, "x": 0, "y": 0, "radius": 15},
        }
    )
    assert goal_poi_indices(city, nav) == (380,)
    sg = TaskSpec.from_dict(
        {
            "id": "s",
            "family": "streetgraph",
            "type": "origin_destination",
            "city": "helsinki",
            "difficulty": "easy",
            "instruction": "go",
            "start": {},
            "goal": {"osm_id": p.osm_id},
        }
    )
    assert goal_poi_indices(city, sg) == (380,)
