"""PoseGraph360 tasks drawn on the fly on procedural cities (``suite="procedural:..."``):
train and test cities differ, the oracle solves every drawn task, draws are
deterministic, and a bad spec is named."""

import gymnasium as gym
import numpy as np
import pytest

import urban_gym  # noqa: F401
from urban_gym.families.posegraph360.oracle import PoseGraphOracle
from urban_gym.families.posegraph360.tasks import (
    NAVIGATION_TYPES,
    PAPER_TASK_TYPES,
    PoseGraphTaskGenerator,
    procedural_source,
)
from urban_gym.tasks.spec import TaskError
from urban_gym.tasks.splits import seeds_of

SMALL = {"view_size": 16, "pano_width": 64}


def _draw(spec, n, seed=1):
    src = procedural_source(spec)
    rng = np.random.default_rng(seed)
    return [src.draw(rng) for _ in range(n)]


def test_train_and_test_cities_differ():
    a = _draw("procedural:blocks=2x2-3x3,split=train,cities=4", 20)
    b = _draw("procedural:blocks=2x2-3x3,split=test,cities=4", 20)
    seeds = lambda ts: {t.meta["seed"] for t in ts}  # noqa: E731
    assert seeds(a) <= set(seeds_of("train", 4)) and seeds(b) <= set(seeds_of("test", 4))
    assert len(seeds(a)) > 1 and not seeds(a) & seeds(b)
    assert not {t.city for t in a} & {t.city for t in b}
    # cities of one size share their street grid: the tasks still differ between splits
    where = lambda ts: {(t.city.split(",")[1], t.start["x"], t.start["y"], t.goal["x"]) for t in ts}  # noqa: E731
    assert not where(a) & where(b)
    for t in a + b:
        assert t.type == "map_navigation" and t.reference_images == ("route_map",)
        assert t.id.startswith(f"posegraph360-proc-{t.meta['split']}-s{t.meta['seed']}-b")
        assert f"seed={t.meta['seed']}," in t.city
        assert 0 < t.meta["oracle_steps"] <= 50


def test_draws_are_deterministic_and_ids_name_the_task():
    spec = "procedural:blocks=2x2-4x4,split=val,cities=3"
    a, b = _draw(spec, 12, seed=7), _draw(spec, 12, seed=7)
    assert [t.to_dict() for t in a] == [t.to_dict() for t in b]
    assert [t.id for t in _draw(spec, 12, seed=8)] != [t.id for t in a]
    # the id is made from the task: one start and goal in one city, one id
    by_id = {}
    for t in a + _draw(spec, 60, seed=9):
        assert by_id.setdefault(t.id, t.to_dict()) == t.to_dict()
    g, s = a[0].goal, a[0].start
    assert a[0].id.endswith(f"-{g['trajectory']}-{g['frame']}-{s['trajectory']}-{s['frame']}")


def test_curriculum_bounds_the_city_size():
    src = procedural_source("procedural:blocks=2x2-5x5,split=train,cities=3")
    src.set_max_blocks(2)
    rng = np.random.default_rng(0)
    assert {src.draw(rng).city.split("blocks=")[1] for _ in range(8)} == {"2x2"}


def _run_oracle(env, seeds):
    oracle = PoseGraphOracle()
    out = []
    for s in seeds:
        obs, info = env.reset(seed=s)
        oracle.reset(env)
        while True:
            action = env.unwrapped.action_index(oracle.act(env))
            obs, _, term, trunc, info = env.step(action)
            if term or trunc:
                break
        out.append((info["task_id"], info["termination"], info["is_success"]))
    return out


def test_oracle_solves_every_drawn_map_navigation_task():
    env = gym.make(
        "UrbanGym/PoseGraph360-v0",
        suite="procedural:blocks=2x2-4x4,split=test,cities=3",
        **SMALL,
    )
    got = _run_oracle(env, range(12))
    assert len({tid for tid, *_ in got}) == 12  # a new task at every reset
    assert all(term == "answered" and ok for _, term, ok in got), got


def test_oracle_solves_drawn_tasks_of_every_type():
    spec = "procedural:blocks=3x3,split=train,cities=2,types=" + "+".join(PAPER_TASK_TYPES)
    env = gym.make("UrbanGym/PoseGraph360-v0", suite=spec, **SMALL)
    got = _run_oracle(env, range(28))
    types = {tid.split("-b3-")[1].split("-")[0] for tid, *_ in got}
    assert len(types) >= 5 and types & NAVIGATION_TYPES and types - NAVIGATION_TYPES
    assert all(term == "answered" and ok for _, term, ok in got), got


def test_make_one_checks_its_arguments_and_keeps_the_difficulty():
    gen = PoseGraphTaskGenerator("procedural:seed=1,blocks=3x3", seed=1)
    rng = np.random.default_rng(0)
    made = [gen.make_one("map_navigation", "easy", rng) for _ in range(10)]
    assert any(made) and all(t.difficulty == "easy" for t in made if t is not None)
    # easy map navigation: a route of 124 m +-15% (360CityArena's easy average)
    assert all(105.4 <= t.meta["route_length"] < 142.6 for t in made if t is not None)
    with pytest.raises(TaskError, match="'landmark_bbox'"):
        gen.make_one("landmark_bbox", "easy", rng)
    with pytest.raises(TaskError, match="'trivial'"):
        gen.make_one("map_navigation", "trivial", rng)


def test_bad_types_are_named():
    with pytest.raises(TaskError, match=r"types \['teleport'\]"):
        procedural_source("procedural:types=map_navigation+teleport")
